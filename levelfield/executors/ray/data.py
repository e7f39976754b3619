"""Scoring saved predictions on Ray Data: a ``.parquet`` / ``.jsonl`` file read on the cluster,
scored batch by batch with the columnar scorer, summed up here as the local path does."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._core import errors
from ..._core.data.config import RunConfig
from ..._core.data.dataset import ALIASES
from ..._core.errors import ConfigError, DatasetError, LevelfieldError
from ..._core.results.result import EvalResult
from ..._core.results.tables import write_summary
from ..._core.score.batch.scorer import BatchScorer, ScoredBatch
from ..._core.score.batch.summary import RunningSummary
from ..._core.score.metrics.base import Metric
from ...formats.batches import BATCH_ROWS, batch_source, table_writer
from ..saved import TABLE_NAMES, check_out
from .runtime_env import _ray, actor_env

if TYPE_CHECKING:
    from .executor import RayExecutor

__all__ = ["score_saved_on_ray", "scores_on_ray_data"]

_SAVED_SUFFIXES = (".parquet", ".jsonl")
_CASE_ID_COLUMNS = ALIASES["case_id"]
_SCENARIO_COLUMNS = ("scenario", "conversation_scenario")


def scores_on_ray_data(data: Any) -> bool:
    """Whether ``data`` is a saved-predictions file Ray Data reads (``.parquet``, ``.jsonl``)."""
    return isinstance(data, (str, Path)) and str(data).lower().endswith(_SAVED_SUFFIXES)


class _RayDataScorer:
    """Scores one Ray Data batch of saved rows with the columnar scorer.

    Every input row comes back as one output row, in input order, scenario rows included
    (``_skipped``), so the driver numbers rows without an id (``_given`` false) by position,
    exactly as the local path does.
    """

    def __init__(self, metrics: Sequence[Metric], source: str, kind: str) -> None:
        self._scorer = BatchScorer(metrics)
        self._names = [m.name for m in metrics]
        self._source = source
        self._kind = kind

    def _rows(self, table: Any) -> list[Mapping[str, Any]]:
        if self._kind == "parquet":
            return table.to_pylist()
        rows = []
        for line in table.column("text").to_pylist():
            if not line.strip():
                continue
            try:
                rows.append(_json_loads(line))
            except ValueError as exc:
                raise DatasetError(f"{self._source}: a line is not valid JSON ({exc}): {line[:80]!r}") from None
        return rows

    def __call__(self, table: Any) -> dict[str, Any]:
        try:
            return self._score(table)
        except LevelfieldError as exc:
            # Ray Data would pass on only its text, wrapped in its own error: the driver raises it again.
            return self._failed(exc)

    def _failed(self, exc: LevelfieldError) -> dict[str, Any]:
        import numpy as np

        out: dict[str, Any] = {"case_id": np.array([""], dtype=object), "failure": np.zeros(1, dtype=np.int8)}
        for name in ("latency_in_seconds", *(f"{m}/score" for m in self._names)):
            out[name] = np.full(1, math.nan)
        out["_skipped"] = np.ones(1, dtype=bool)
        out["_given"] = np.ones(1, dtype=bool)
        out["_with_predictions"] = np.zeros(1, dtype=np.int64)
        for name in self._names:
            out[f"_failed/{name}"] = np.zeros(1, dtype=np.int64)
            out[f"_failed_applies/{name}"] = np.zeros(1, dtype=np.int64)
        out["_error"] = np.array([f"{type(exc).__name__}\n{exc}"], dtype=object)
        return out

    def _score(self, table: Any) -> dict[str, Any]:
        import numpy as np

        rows = self._rows(table)
        scored = self._scorer.score(_Rows(rows, self._source))
        # The scorer leaves out conversation-scenario rows (they need a user simulator); which
        # rows those are is read here the way the scorer reads it, so the others keep their places.
        gone = [i for i, row in enumerate(rows) if any(not _absent(row.get(c)) for c in _SCENARIO_COLUMNS)]
        kept = sorted(set(range(len(rows))) - set(gone))
        cols = scored.columns
        if len(kept) != len(cols["case_id"]):  # pragma: no cover - the scorer's rule for skipping changed
            raise RuntimeError("the columnar scorer skipped other rows than conversation scenarios")
        n = len(rows)
        at = np.array(kept, dtype=np.int64)
        ids = np.empty(n, dtype=object)
        ids[at] = list(cols["case_id"])
        ids[gone] = list(scored.skipped)
        out: dict[str, Any] = {"case_id": ids, "failure": np.zeros(n, dtype=np.int8)}
        out["failure"][at] = np.asarray(cols["failure"], dtype=np.int8)
        for name in ("latency_in_seconds", *(f"{m}/score" for m in self._names)):
            out[name] = np.full(n, math.nan)
            out[name][at] = np.asarray(cols[name], dtype=float)
        out["_skipped"] = np.zeros(n, dtype=bool)
        out["_skipped"][gone] = True
        out["_given"] = np.array([any(not _absent(row.get(c)) for c in _CASE_ID_COLUMNS) for row in rows], dtype=bool)
        # Counts of the whole batch ride on its first row.
        first = np.zeros(len(rows), dtype=np.int64)
        out["_with_predictions"] = first.copy()
        if len(rows):
            out["_with_predictions"][0] = scored.with_predictions
        for name in self._names:
            for key, counts in (("_failed", scored.failed), ("_failed_applies", scored.failed_applies)):
                out[f"{key}/{name}"] = first.copy()
                if len(rows) and counts.get(name):
                    out[f"{key}/{name}"][0] = counts[name]
        out["_error"] = np.array([""] * len(rows), dtype=object)
        return out


def _score_block(table: Any, metrics: Sequence[Metric], source: str, kind: str) -> dict[str, Any]:
    """One Ray Data batch of saved rows, scored (a Ray task; the scorer is cheap to build)."""
    return _RayDataScorer(metrics, source, kind)(table)


@dataclass
class _Rows:
    """Rows in memory, as the columnar scorer reads a batch (its place in the file is not known here)."""

    rows_: list[Mapping[str, Any]]
    source: str
    start: int = 0

    def rows(self) -> list[Mapping[str, Any]]:
        return self.rows_

    def where(self, i: int) -> str:
        return f"{self.source} (row {i + 1} of a Ray Data batch)"


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_loads(line: str) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson comes with pyarrow's extras
        return json.loads(line)
    return orjson.loads(line)


def score_saved_on_ray(executor: RayExecutor, data: str | Path, metrics: Sequence[Metric], config: RunConfig) -> EvalResult:
    """Score the saved predictions in a ``.parquet``/``.jsonl`` file on Ray Data.

    ``read_parquet`` / ``read_text`` → ``map_batches`` with the columnar scorer on ``num_workers``
    actors → the scored batches stream back in order and are summed up (and, with ``out=``,
    written to ``out/metrics_table.parquet`` and ``summary.json``) here, as the local columnar
    path does: the same scores and summary.
    """
    import numpy as np
    import pandas as pd

    ray = _ray()
    source = str(data)
    # Ray Data reads on the workers, whose working folder is not this one (a job's working_dir):
    # a local path goes as an absolute one; a URI (s3://, gs://) as it is.
    path = source if "://" in source else str(Path(source).resolve())
    kind = "parquet" if path.lower().endswith(".parquet") else "jsonl"
    for metric in metrics:
        try:
            _cloudpickle(ray).dumps(metric)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(
                f"executor='ray' scores on Ray workers, and metric {metric.name!r} cannot be sent there "
                f"({type(exc).__name__}: {exc}); define it at module level in an importable module"
            ) from None
    out = config.out_dir
    if out is not None:
        check_out(out, config)
    dataset = ray.data.read_parquet(path) if kind == "parquet" else ray.data.read_text(path)
    workers = executor.num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    options: dict[str, Any] = {}
    env = actor_env(ray, executor.address, executor.runtime_env)
    if env:
        options["runtime_env"] = env
    # Ray tasks (pooled worker processes, freed between batches), at most one per worker at once.
    try:
        options["compute"] = ray.data.TaskPoolStrategy(size=workers)
    except TypeError:  # an older Ray, where the cap on tasks is map_batches(concurrency=)
        options["concurrency"] = workers
    scored = dataset.map_batches(
        _score_block, fn_args=(list(metrics), source, kind), batch_format="pyarrow", batch_size=BATCH_ROWS, **options,
    )
    context = ray.data.DataContext.get_current()
    ordered, bars = context.execution_options.preserve_order, context.enable_progress_bars
    context.execution_options.preserve_order = True  # rows without an id are numbered by position
    context.enable_progress_bars = config.progress
    names = [m.name for m in metrics]
    summary = RunningSummary(names)
    writer = table_writer(out / TABLE_NAMES[0]) if out is not None else None
    kept: list[pd.DataFrame] = []
    skipped: dict[str, str] = {}
    first_row: dict[str, int] = {}
    offset = 0
    try:
        for block in _blocks(scored):
            for text in block["_error"]:
                if text:
                    kind, _, message = str(text).partition("\n")
                    error = getattr(errors, kind, None)
                    raise (error if isinstance(error, type) and issubclass(error, LevelfieldError) else DatasetError)(message)
            n = len(block["case_id"])
            ids = [str(c) if given else str(offset + i) for i, (c, given) in enumerate(zip(block["case_id"], block["_given"]))]
            live = ~np.asarray(block["_skipped"], dtype=bool)
            for case_id, keep in zip(ids, live):
                if not keep:
                    skipped[case_id] = "a conversation_scenario case needs a user simulator"
            columns: dict[str, Any] = {"case_id": [c for c, keep in zip(ids, live) if keep]}
            for name in ("failure", "latency_in_seconds", *(f"{m}/score" for m in names)):
                columns[name] = np.asarray(block[name])[live]
            for case_id, row in zip(columns["case_id"], (offset + np.flatnonzero(live) + 1).tolist()):
                seen = first_row.setdefault(case_id, row)
                if seen != row:
                    raise DatasetError(f"{source}: case ids must be unique; {case_id!r} is at row {seen} and again "
                                       f"at row {row}. Give each row its own id, or drop the id column to number the rows")
            batch = ScoredBatch(
                columns,
                failed={m: int(block[f"_failed/{m}"].sum()) for m in names if block[f"_failed/{m}"].sum()},
                with_predictions=int(block["_with_predictions"].sum()),
                failed_applies={m: int(block[f"_failed_applies/{m}"].sum()) for m in names},
            )
            summary.add(batch)
            if writer is not None:
                writer.write(batch)
            else:
                kept.append(pd.DataFrame(columns))
            offset += n
    except BaseException as exc:
        if writer is not None:
            writer.abort()
        own = _levelfield_error(exc)
        if own is not None:
            raise own from None  # a bad row or metric, named as locally, not wrapped in Ray's task error
        raise
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = ordered, bars
    if not summary.rows and not skipped:
        raise DatasetError(f"{source}: the dataset has no rows")
    if not summary.with_predictions and not skipped:
        raise DatasetError(f"{source}: no agent was given and no row has a 'response' or 'predicted_trajectory' "
                           "to score; pass an agent, or a dataset with saved predictions")
    totals = summary.summary()
    # A file on this machine is read again here when explanations, cases or runs are asked for.
    again = None if "://" in source else (lambda: batch_source(path, source=source).batches)
    if writer is not None:
        assert out is not None
        table_path = writer.close()
        write_summary(out / "summary.json", totals)
        return EvalResult.from_batches(metrics, totals, source=source, config=config, table_path=table_path, skipped=skipped,
                                       rows=again)
    table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return EvalResult.from_batches(metrics, totals, source=source, config=config, table=table, skipped=skipped, rows=again)


def _blocks(scored: Any) -> Iterator[dict[str, Any]]:
    """The scored blocks in order, streamed (a block is in memory only while the driver reads it)."""
    with warnings.catch_warnings():
        # A file smaller than a batch is one block: Ray Data's note that fewer tasks than allowed
        # could start is no news to the user.
        warnings.filterwarnings("ignore", message="The maximum number of concurrent tasks")
        yield from scored.iter_batches(batch_size=None, batch_format="numpy")


def _levelfield_error(exc: BaseException) -> LevelfieldError | None:
    """The levelfield error a Ray task error carries (a bad row, a metric), if it carries one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, LevelfieldError):
            return current
        seen.add(id(current))
        current = getattr(current, "cause", None) or current.__cause__
    return None


def _cloudpickle(ray: Any) -> Any:
    from ray import cloudpickle

    return cloudpickle
