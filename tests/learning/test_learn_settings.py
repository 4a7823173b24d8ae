"""The learn job fits the engine's settings too (learning.tuning): on a catalog
whose right tools are told apart by their parameters, a learn proposes field and
fusion weights with their held-out evidence, applying it is one audited (and
gated) settings change, and /select then ranks the right tool first for a
request no label asked."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.services.catalogs import ensure_default_catalog
from learning.models import Label, LabelStatus, LearnState
from learning.services import learn
from selection.models import SelectionSettings
from tests.factories import make_tool
from tests.learning.test_tuning import COUNT, PHRASES, word

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    found = ensure_default_catalog()
    for i in range(COUNT):
        w = word(i)
        make_tool(
            found,
            f"handler_{chr(97 + i)}",
            description="Handles one kind of request.",
            parameters={
                "type": "object",
                "properties": {w: {"type": "string", "description": f"the {w}"}},
            },
        )
        make_tool(
            found,
            f"helper_{chr(97 + i)}",
            description=f"Notes about {w}: use it, I need it now, run it for me, "
            "please, today and any other day.",
            parameters={"type": "object", "properties": {}},
        )
    for i in range(COUNT):
        for phrase in PHRASES[:3]:
            Label.objects.create(
                catalog=found,
                query=phrase.format(w=word(i)),
                tools=[f"handler_{chr(97 + i)}"],
                status=LabelStatus.ACCEPTED,
            )
    return found


def run(model):
    claimed = learn.claim(model.pk)
    assert claimed is not None
    return learn.run_learn(claimed)


def test_a_learn_proposes_engine_settings_with_their_held_out_evidence(catalog):
    model = run(learn.request_learn(catalog, actor=None, apply=False))
    assert model.state == LearnState.SUCCEEDED, model.error
    report = model.cv["settings"]
    assert report["changed"]
    assert report["ndcg_tuned"] > report["ndcg_before"] + 0.3
    patch = model.params["settings"]
    tunable = {"field_weights", "hybrid_weights", "bm25_k1", "auto_fusion"}
    assert patch and set(patch) <= tunable
    # Weights fitted on labels replace the catalog's label-free choice.
    assert patch.get("auto_fusion", False) is False
    for key, value in patch.items():
        assert model.proposed_settings[key] == value
    assert not SelectionSettings.objects.filter(catalog=catalog).exists()


def test_applying_it_is_one_audited_settings_change_select_then_uses(
    catalog, as_user, curator
):
    ask = {"query": f"{word(4)} is what I want", "min_score": 0}
    before = as_user(curator).post("/api/v1/select", ask, format="json")
    assert before.json()["tools"][0]["name"] != "handler_e"
    model = run(learn.request_learn(catalog, actor=curator, apply=True))
    model.refresh_from_db()
    assert model.applied_settings_version == 1
    saved, _ = SelectionSettings.objects.effective_for(catalog)
    for key, value in model.params["settings"].items():
        assert saved.to_dict()[key] == value
    events = AuditEvent.objects.filter(event_type="settings")
    assert events.count() == 1
    assert events.get().input["gate"]["delta"] > 0
    after = as_user(curator).post("/api/v1/select", ask, format="json")
    assert after.json()["tools"][0]["name"] == "handler_e"
