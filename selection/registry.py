"""What the apps above selection lend it at start-up (their ``AppConfig.ready``).

Selection never imports learning. Learning registers three things here: the
learnt signal of a stored model (read when a snapshot is built), the regression
gate every settings change passes before it is saved, and the evaluation of
proposed settings the settings page runs. Until they are registered each of them
fails loudly (``ImproperlyConfigured``), never quietly: a settings change must
not skip its gate because nothing was registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from audit.actors import Actor
from catalog.models import Catalog
from selection.engine.learnt import LearntSignal


class RegressionRefused(Exception):
    """The change lowers the catalog's labelled NDCG@10 too much; ``report`` says
    how (its ``rule``, the scores before and after and their delta)."""

    def __init__(self, report: dict[str, Any]) -> None:
        super().__init__(
            f"{report['rule']} (NDCG@10 {report['ndcg_before']:.4f} -> "
            f"{report['ndcg_after']:.4f}, delta {report['delta']:+.4f})"
        )
        self.report = report


class EvaluationInputError(ValueError):
    """Inline labels or settings that cannot be evaluated: field -> rules."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(m for ms in errors.values() for m in ms))
        self.errors = errors


LearntSignals = Callable[[Catalog, int | None], LearntSignal | None]


class RegressionGate(Protocol):
    """The gate's report for a change of ``catalog``'s settings (None: no gate);
    raises ``RegressionRefused`` for a drop without a reason."""

    def __call__(
        self,
        catalog: Catalog,
        new_settings_data: Mapping[str, Any],
        *,
        accept_regression_reason: str | None = None,
    ) -> dict[str, Any] | None: ...


class SettingsEvaluation(Protocol):
    """Two evaluation runs of the catalog's labels, under its saved settings and
    under ``proposed`` ({"saved": run, "tried": run}); ``EvaluationInputError``
    for settings or labels it cannot run, ``LimitReached`` past a limit."""

    def __call__(
        self, catalog: Catalog, *, actor: Actor, proposed: dict[str, Any]
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Learning:
    """What learning lends selection."""

    signal: LearntSignals
    gate: RegressionGate
    evaluate: SettingsEvaluation


_lent: list[Learning] = []


def register_learning(learning: Learning) -> None:
    _lent[:] = [learning]


def _learning() -> Learning:
    if not _lent:
        raise ImproperlyConfigured(
            "selection: learning is not registered (learning.apps.LearningConfig)"
        )
    return _lent[0]


def learnt_signal(catalog: Catalog, model_id: int | None) -> LearntSignal | None:
    """The learnt signal of the catalog's stored model ``model_id``, if any."""
    return _learning().signal(catalog, model_id)


def check_settings_change(
    catalog: Catalog,
    new_settings_data: Mapping[str, Any],
    *,
    accept_regression_reason: str | None = None,
) -> dict[str, Any] | None:
    """The regression gate's report for this change (see ``RegressionGate``)."""
    gate = _learning().gate
    return gate(
        catalog, new_settings_data, accept_regression_reason=accept_regression_reason
    )


def evaluate_settings(
    catalog: Catalog, *, actor: Actor, proposed: dict[str, Any]
) -> dict[str, Any]:
    """Runs of the saved and the proposed settings (see ``SettingsEvaluation``)."""
    return _learning().evaluate(catalog, actor=actor, proposed=proposed)
