"""/api/v1/catalogs/{slug}/labels: labelled requests uploaded in bulk (each bad
item refused with its reason, the rest kept), listed, reviewed and deleted, each
change one labels_changed audit event."""

from __future__ import annotations

import pytest

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.services import create_catalog
from learning.models import Label, LabelOrigin, LabelStatus
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

URL = "/api/v1/catalogs/default/labels"


@pytest.fixture
def tools(db):
    for name in ("get_weather", "send_email", "create_calendar_event"):
        make_tool(name=name)


@pytest.fixture
def curator_api(as_user, curator, tools):
    return as_user(curator)


def upload(client, items, url=URL):
    return client.post(url, {"labels": items}, format="json")


def label_events():
    return AuditEvent.objects.filter(event_type=EventType.LABELS_CHANGED).order_by("id")


def test_a_curator_uploads_labels_and_they_are_accepted(curator_api):
    response = upload(
        curator_api,
        [
            {"query": "weather in Lisbon", "tools": ["get_weather"]},
            {
                "messages": [{"role": "user", "content": "mail Dana"}],
                "tools": ["send_email"],
            },
            {"query": "tell me a joke", "tools": []},
        ],
    )
    assert response.status_code == 201, response.json()
    assert response.json() == {"added": 3, "refused_count": 0, "refused": []}
    stored = list(Label.objects.values_list("query", "tools", "origin", "status"))
    assert stored[0] == ("weather in Lisbon", ["get_weather"], "upload", "accepted")
    assert stored[2][1] == []
    assert Label.objects.get(tools=["send_email"]).messages[0]["content"] == "mail Dana"


BAD_ITEMS = [
    ({"query": "x", "tools": ["no_such_tool"]}, "tools", "no tool 'no_such_tool'"),
    (
        {"query": "x", "messages": [{"role": "user"}], "tools": []},
        "query",
        "exactly one",
    ),
    ({"tools": ["get_weather"]}, "query", "exactly one"),
    ({"query": "x"}, "tools", "is required"),
    ({"query": "x", "tools": "get_weather"}, "tools", "list of tool names"),
    ({"query": "x", "tools": ["get_weather", "get_weather"]}, "tools", "twice"),
    ({"query": "   ", "tools": []}, "query", "must not be empty"),
    ({"query": 7, "tools": []}, "query", "must be a string"),
    ({"query": "x" * 20_001, "tools": []}, "query", "at most 20000"),
    ({"messages": [{"content": "hi"}], "tools": []}, "messages", "role: is required"),
    ({"query": "x", "tools": [], "weight": 2}, "weight", "unknown field"),
    ("just text", "", "must be an object"),
]


@pytest.mark.parametrize(("item", "field", "words"), BAD_ITEMS)
def test_each_bad_item_is_refused_with_its_index_and_reason_and_the_rest_kept(
    curator_api, item, field, words
):
    good = {"query": "weather in Oslo", "tools": ["get_weather"]}
    response = upload(curator_api, [good, item])
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["added"] == 1
    [refused] = body["refused"]
    assert refused["index"] == 1
    assert refused["field"] == field
    assert refused["reason"].startswith("labels[1]")
    assert words in refused["reason"]
    assert list(Label.objects.values_list("query", flat=True)) == ["weather in Oslo"]


def test_a_request_labelled_twice_is_refused_as_a_duplicate(curator_api):
    first = upload(
        curator_api, [{"query": "weather in Rome", "tools": ["get_weather"]}]
    )
    assert first.json()["added"] == 1
    again = upload(
        curator_api,
        [
            {"query": "weather in Rome ", "tools": ["send_email"]},
            {"query": "mail Bo", "tools": ["send_email"]},
            {"query": "mail Bo", "tools": []},
        ],
    )
    body = again.json()
    assert body["added"] == 1
    reasons = {r["index"]: r["reason"] for r in body["refused"]}
    assert "already labelled" in reasons[0]
    assert "the same request as labels[1]" in reasons[2]
    assert Label.objects.count() == 2


def test_a_tool_of_another_catalog_is_an_unknown_tool(curator_api):
    other = create_catalog("other", "Other", actor=None)
    make_tool(other, name="other_tool")
    body = upload(curator_api, [{"query": "x", "tools": ["other_tool"]}]).json()
    assert body["added"] == 0
    assert "no tool 'other_tool' in catalog 'default'" in body["refused"][0]["reason"]


def test_more_than_10000_labels_is_a_400_naming_labels_and_nothing_is_stored(
    curator_api,
):
    items = [{"query": f"q {i}", "tools": []} for i in range(10_001)]
    response = upload(curator_api, items)
    assert response.status_code == 400
    assert "labels" in response.json()["fields"]
    assert "at most 10000" in str(response.json()["fields"]["labels"])
    assert Label.objects.count() == 0
    assert not label_events().exists()


def test_10000_labels_are_stored_in_bulk_in_a_few_queries(
    curator_api, django_assert_max_num_queries
):
    items = [
        {"query": f"weather in town {i}", "tools": ["get_weather"]}
        for i in range(10_000)
    ]
    with django_assert_max_num_queries(30):
        response = upload(curator_api, items)
    assert response.json()["added"] == 10_000
    assert Label.objects.count() == 10_000


def test_an_upload_is_one_audit_event_with_counts(curator_api, curator):
    upload(
        curator_api,
        [
            {"query": "weather in Lima", "tools": ["get_weather"]},
            {"query": "x", "tools": ["nope"]},
        ],
    )
    [event] = label_events()
    assert event.actor_name == curator.username
    assert event.catalog_slug == "default"
    assert event.input["action"] == "upload"
    assert event.input["received"] == 2
    assert event.input["labels"] == [
        {"query": "weather in Lima", "tools": ["get_weather"]}
    ]
    assert event.input["refused"][0]["index"] == 1
    assert event.output["added"] == 1
    assert event.output["refused"] == 1
    assert event.output["first_id"] == event.output["last_id"] == Label.objects.get().pk


def test_a_large_upload_keeps_counts_not_the_labels_in_its_audit_event(curator_api):
    items = [{"query": f"mail person {i}", "tools": ["send_email"]} for i in range(150)]
    upload(curator_api, items)
    [event] = label_events()
    assert "labels" not in event.input
    assert event.input["with_tools"] == 150
    assert event.output["added"] == 150


def test_the_list_is_paged_with_a_count_and_filters(curator_api):
    Label.objects.bulk_create(
        [Label(catalog_id=1, query=f"q{i}", tools=[]) for i in range(60)]
        + [Label(catalog_id=1, query="p", tools=[], status="proposed", origin="use")]
    )
    body = curator_api.get(URL).json()
    assert body["count"] == 61
    assert len(body["results"]) == 50
    assert curator_api.get(URL + "?page=2").json()["results"][-1]["query"] == "p"
    proposed = curator_api.get(URL + "?status=proposed&origin=use").json()
    assert [r["query"] for r in proposed["results"]] == ["p"]


def test_a_bad_filter_is_a_400_naming_it(curator_api):
    response = curator_api.get(URL + "?status=maybe")
    assert response.status_code == 400
    assert "status" in response.json()["fields"]


def test_deleting_one_label_is_audited_and_an_unknown_one_is_a_404(curator_api):
    upload(curator_api, [{"query": "a", "tools": []}, {"query": "b", "tools": []}])
    first = Label.objects.get(query="a")
    assert curator_api.delete(f"{URL}/{first.pk}").status_code == 204
    assert list(Label.objects.values_list("query", flat=True)) == ["b"]
    assert curator_api.delete(f"{URL}/{first.pk}").status_code == 404
    assert curator_api.delete(f"{URL}/99999999999999999999").status_code == 404
    event = label_events().last()
    assert event.input == {"action": "delete", "label_id": first.pk}
    assert event.output == {"deleted": 1}


def test_deleting_all_needs_all_true_or_a_filter(curator_api):
    upload(curator_api, [{"query": "a", "tools": []}])
    Label.objects.create(catalog_id=1, query="p", status="proposed", origin="use")
    refused = curator_api.delete(URL)
    assert refused.status_code == 400
    assert "all" in refused.json()["fields"]
    assert curator_api.delete(URL + "?status=proposed").json() == {"deleted": 1}
    assert list(Label.objects.values_list("query", flat=True)) == ["a"]
    assert curator_api.delete(URL + "?all=true").json() == {"deleted": 1}
    assert not Label.objects.exists()
    assert [e.output for e in label_events()][-2:] == [{"deleted": 1}, {"deleted": 1}]


def test_reviewing_accepts_or_rejects_only_proposals_in_one_event(curator_api):
    proposed = [
        Label.objects.create(
            catalog_id=1, query=f"p{i}", status="proposed", origin="use"
        )
        for i in range(3)
    ]
    uploaded = Label.objects.create(catalog_id=1, query="u")
    ids = [proposed[0].pk, proposed[1].pk, uploaded.pk]
    review = curator_api.post(
        f"{URL}/review", {"ids": ids, "status": "accepted"}, format="json"
    )
    assert review.json() == {"changed": 2}
    statuses = dict(Label.objects.values_list("query", "status"))
    assert statuses == {
        "p0": "accepted",
        "p1": "accepted",
        "p2": "proposed",
        "u": "accepted",
    }
    event = label_events().last()
    assert event.input == {"action": "accept", "label_ids": ids[:2]}
    reject = curator_api.post(
        f"{URL}/review", {"ids": [proposed[2].pk], "status": "rejected"}, format="json"
    )
    assert reject.json() == {"changed": 1}
    assert Label.objects.get(query="p2").status == LabelStatus.REJECTED
    assert Label.objects.get(query="p2").origin == LabelOrigin.USE


def test_labels_and_their_audit_event_commit_together_or_not_at_all(
    curator_api, monkeypatch
):
    from learning.services import labels as service

    def broken(*args, **kwargs):
        raise RuntimeError("the audit log is down")

    monkeypatch.setattr(service, "record_event", broken)
    with pytest.raises(RuntimeError):
        upload(curator_api, [{"query": "weather in Bonn", "tools": ["get_weather"]}])
    assert not Label.objects.exists()
    Label.objects.create(catalog_id=1, query="kept")
    with pytest.raises(RuntimeError):
        curator_api.delete(URL + "?all=true")
    assert Label.objects.filter(query="kept").exists()
