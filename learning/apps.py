from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = "Labels and learning"

    def ready(self) -> None:
        # The learn job's tasks live beside the labels' tasks module.
        from learning import learn_tasks  # noqa: F401
        from learning.gate import check_change
        from learning.services.evaluations import evaluate_pair
        from learning.signal import signal_for
        from selection.registry import Learning, register_learning

        # Selection never imports learning: it reads these through its registry.
        register_learning(
            Learning(signal=signal_for, gate=check_change, evaluate=evaluate_pair)
        )
        _lend_metrics()


def _lend_metrics() -> None:
    """/metrics counts the ``learning`` queue (evaluations and learns) from rows."""
    from learning.models import Evaluation, EvaluationState, LearntModel
    from telemetry.collector import WAITING, Read, register_read

    waiting = "WHERE state IN (%(queued)s, %(running)s)"
    sql = (
        f"(SELECT {WAITING} FROM ("
        f"SELECT state, created FROM {Evaluation._meta.db_table} {waiting} "
        f"UNION ALL SELECT state, created FROM {LearntModel._meta.db_table} {waiting}"
        ") AS runs)"
    )
    params = {"queued": EvaluationState.QUEUED, "running": EvaluationState.RUNNING}
    register_read("learning_runs", Read(sql, params))
