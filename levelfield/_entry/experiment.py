"""Experiment logging: each agent's evaluation as an MLflow run, the open twin of Vertex's ``experiment=``.

``lf.evaluate(..., experiment="name")``, ``lf.compare(..., experiment="name")``,
``EvalTask(..., experiment="name")`` and ``--experiment NAME`` all land here. Every agent gets
one MLflow run in that experiment with:

- params: ``agent``, ``dataset``, ``cases``, ``metrics``, ``trials``, ``failed_runs``;
- metrics: each metric's ``<metric>/mean``, ``/ci_low``, ``/ci_high`` (the comparison's
  intervals, by the ``failed_runs`` rule in the params), the mean by the other rule
  (``/mean_failed_as_zero`` for an evaluation, ``/mean_failed_left_out`` for a comparison), pass@k as ``/pass_at_k``, pass^k as ``/pass_hat_k``, ``failures``,
  ``failure_rate``, latency and, when usage was reported, ``cost_usd/mean`` (with its interval),
  ``cost_usd/sum`` and judged metrics' ``<metric>/cost_usd/sum``; NaN values are left out rather
  than logged (an unknown cost: the tag ``levelfield.cost_note`` names the model without a price);
- params: each metric's evaluator (``levelfield.evaluator.<metric>.fingerprint``, ``.version``,
  ``.judge_model``, ``.judge_settings``, ``.prompt_sha256``, ``.rubrics_sha256``...), so a run in
  the MLflow UI says which judge, prompt and metric version gave its scores;
- artifacts: ``metrics_table.csv`` (that agent's rows) and ``report.html`` (the whole report).

Where it goes is MLflow's own choice: ``MLFLOW_TRACKING_URI`` when set, else MLflow's local
store in the current directory (``mlflow.db``, viewable with ``mlflow ui``), so no server is
needed. The ``mlflow`` extra installs ``mlflow-skinny`` and the database driver it needs for
that local store; ``mlflow-tracing`` alone cannot record locally.
"""

from __future__ import annotations

import math
import numbers
import re
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from .._core.results.result import EvalResult
    from .._core.stats.config import StatsConfig
    from ..comparison._comparison import Comparison

__all__ = ["require_mlflow", "check_experiment_name", "log_evaluation", "log_comparison"]

# MLflow stores at most 6000 characters of a param value.
_PARAM_CHARS = 6000
# MLflow accepts letters, digits, _ - . / space and colon in metric names; pass@k and pass^k need words.
_MLFLOW_NAME = re.compile(r"[^\w\-./ :]")


def require_mlflow() -> Any:
    """The ``mlflow`` module, or a MissingExtraError naming the extra to install."""
    try:
        import mlflow
    except ImportError:
        raise MissingExtraError("mlflow", "mlflow", "experiment logging (experiment=...)") from None
    return mlflow


def _metric_name(column: str) -> str:
    name = re.sub(r"pass@(\d+)", r"pass_at_\1", column)
    name = re.sub(r"pass\^(\d+)", r"pass_hat_\1", name)
    return _MLFLOW_NAME.sub("_", name)


def _param_name(key: str) -> str:
    """A param key MLflow accepts (letters, digits, ``_ - . / space``), at most 250 characters."""
    return re.sub(r"[^\w\-./ ]", "_", key)[:250]


def _experiment_id(client: Any, name: str) -> str:
    check_experiment_name(name)
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found is not None else client.create_experiment(name)


def check_experiment_name(experiment: Any) -> None:
    """A ConfigError unless ``experiment`` is a usable MLflow experiment name."""
    if not isinstance(experiment, str) or not experiment.strip():
        raise ConfigError(f"experiment={experiment!r}: give the MLflow experiment a non-empty name")


def log_comparison(
    cmp: Comparison,
    experiment: str,
    *,
    run_name: str | None = None,
    extra_metrics: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, str]:
    """Log every agent of ``cmp`` as one MLflow run in ``experiment``; returns agent -> run id.

    ``run_name`` names the runs (``"<run_name>/<agent>"`` when there are several agents);
    by default a run is named after its agent. Runs of one comparison share the tag
    ``levelfield.comparison``. ``extra_metrics``: agent -> more metrics to log for it.
    """
    from mlflow.entities import Metric, Param, RunTag

    from ..comparison._verdict import verdict_lines
    from ..report import render

    mlflow = require_mlflow()
    client = mlflow.MlflowClient()
    experiment_id = _experiment_id(client, experiment)
    group = uuid.uuid4().hex
    verdict = "\n".join(verdict_lines(cmp))
    report = render(cmp)
    now = _now_ms()
    run_ids: dict[str, str] = {}
    for agent in cmp.agents:
        name = agent if run_name is None else (run_name if len(cmp.agents) == 1 else f"{run_name}/{agent}")
        tags = {"levelfield.comparison": group, "levelfield.agent": agent}
        note = cmp.summary.loc[agent].get("cost_usd/note")
        if isinstance(note, str):
            tags["levelfield.cost_note"] = note  # why cost_usd is missing: the model without a price
        if verdict:
            tags["mlflow.note.content"] = verdict  # shown as the run's description in the MLflow UI
        run = client.create_run(experiment_id, run_name=name, tags=tags)
        run_id = run.info.run_id
        try:
            params = {
                "agent": agent,
                "dataset": str(cmp.dataset.source),
                "cases": len(cmp.dataset),
                "metrics": ",".join(cmp.metric_names),
                "trials": cmp.trials,
                "failed_runs": cmp.failed_runs,
                "agents": ",".join(cmp.agents),
            }
            for evaluator in cmp.results[agent].evaluators.values():
                params.update({_param_name(k): v for k, v in evaluator.attributes().items()})
            metrics = [
                Metric(_metric_name(str(k)), float(v), now, 0)
                for k, v in cmp.summary.loc[agent].items()
                if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))
            ]
            metrics += [
                Metric(_metric_name(k), float(v), now, 0)
                for k, v in (extra_metrics or {}).get(agent, {}).items()
                if math.isfinite(float(v))
            ]
            client.log_batch(
                run_id,
                metrics=metrics,
                params=[Param(k, str(v)[:_PARAM_CHARS]) for k, v in params.items()],
                tags=[RunTag("levelfield.kind", cmp.kind)],  # what made it, as its run record says
            )
            with tempfile.TemporaryDirectory(prefix="levelfield-mlflow-") as tmp:
                table = Path(tmp) / "metrics_table.csv"
                cmp.results[agent].to_csv(table)
                page = Path(tmp) / "report.html"
                page.write_text(report, encoding="utf-8")
                client.log_artifact(run_id, str(table))
                client.log_artifact(run_id, str(page))
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED")
        run_ids[agent] = run_id
    return run_ids


def log_evaluation(result: EvalResult, experiment: str, *, run_name: str | None = None,
                   stats: StatsConfig | None = None) -> str:
    """Log one ``evaluate`` result as an MLflow run in ``experiment``; returns the run id.

    The numbers are the same a one-agent comparison shows (by default failed runs left out, as in
    ``evaluate``; ``stats`` as the command line was given them), plus Vertex's ``<metric>/std`` and
    ``<metric>/nan_count``.
    """
    from ..comparison._comparison import Comparison

    require_mlflow()
    cmp = Comparison.of_evaluation(result, stats=stats)
    agent = cmp.agents[0]
    vertex = {
        k: float(v)
        for k, v in result.summary_metrics.items()
        if k.endswith(("/std", "/nan_count")) and isinstance(v, numbers.Real) and not isinstance(v, bool)
    }
    return log_comparison(cmp, experiment, run_name=run_name, extra_metrics={agent: vertex})[agent]


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
