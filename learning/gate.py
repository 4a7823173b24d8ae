"""The regression gate: a settings change may not make a labelled catalog worse.

Any change to a catalog's selection settings (the settings API, applying a
learn) is scored on the catalog's accepted labels before it is saved: the
cross-validated NDCG@10 (learning.crossval.settings_ndcg) of the settings in
force and of the new ones. A drop of more than ``MAX_DROP`` is refused unless
the curator accepts the regression with a reason, which the settings' audit
event records with the numbers. A catalog without labels has no gate.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from catalog.models import Catalog
from learning import crossval
from learning.signal import signal_for
from selection.engine.settings import EngineSettings
from selection.models import SelectionSettings
from selection.registry import RegressionRefused

MAX_DROP = 0.01
GATE_LABELS = 1000
RULE = (
    "regression gate: a settings change may not lower the catalog's "
    f"cross-validated NDCG@10 on its accepted labels by more than {MAX_DROP:g} "
    "unless accept_regression gives a reason"
)


def check_change(
    catalog: Catalog,
    new_settings_data: Mapping[str, Any],
    *,
    accept_regression_reason: str | None = None,
) -> dict[str, Any] | None:
    """The gate's report for changing ``catalog``'s settings to the given ones
    (None: no labels, no gate); raises ``RegressionRefused`` for a drop of more
    than ``MAX_DROP`` without a reason."""
    labels = crossval.accepted_labels(catalog)
    if not any(label.tools for label in labels):
        return None
    prepared = crossval.prepare(catalog, _some(labels))
    if not any(lab.tools for lab in prepared.labels):
        return None
    current, _ = SelectionSettings.objects.effective_for(catalog)
    new = EngineSettings.from_dict(dict(new_settings_data))
    before = _score(catalog, current, prepared)
    after = _score(catalog, new, prepared)
    report: dict[str, Any] = {
        "rule": RULE,
        "labels": sum(1 for lab in prepared.labels if lab.tools),
        "ndcg_before": round(before, 4),
        "ndcg_after": round(after, 4),
        "delta": round(after - before, 4),
    }
    if after < before - MAX_DROP:
        reason = (accept_regression_reason or "").strip()
        if not reason:
            raise RegressionRefused(report)
        report["accepted_regression"] = reason
    return report


def _some(labels: list[Any]) -> list[Any]:
    """At most ``GATE_LABELS`` labels, the same ones every time (each is embedded
    once per process; the gate answers a settings change synchronously)."""
    if len(labels) <= GATE_LABELS:
        return labels
    keep = sorted(random.Random(7).sample(range(len(labels)), GATE_LABELS))
    return [labels[i] for i in keep]


def _score(
    catalog: Catalog, engine_settings: EngineSettings, prepared: crossval.Prepared
) -> float:
    learnt = signal_for(catalog, engine_settings.learnt_model)
    return crossval.settings_ndcg(catalog, engine_settings, prepared, learnt)
