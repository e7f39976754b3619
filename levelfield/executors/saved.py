"""Scoring saved predictions at any size: a batch reader, the columnar scorer, a table writer.

``lf.evaluate(data, metrics=...)`` without an agent comes here when ``data`` is saved rows (a
``.jsonl``/``.parquet``/``.arrow``/``.csv`` file, a DataFrame, a pyarrow Table or a list of dicts):
the rows are read and scored a batch at a time (``workers=`` processes at once) and, with
``out=``, the metrics table is streamed to ``out/metrics_table.parquet`` beside ``summary.json``,
so a file larger than memory scores in bounded memory. See ``levelfield._core.score.batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._core.data.config import RunConfig
from .._core.errors import RecordError
from .._core.results.result import EvalResult
from .._core.results.resume import check_out_folder
from .._core.results.tables import parquet_available, write_summary
from .._core.run.notices import warn_user
from .._core.score.batch.pool import score_batches
from .._core.score.batch.scorer import ScoredBatch, detail_columns
from .._core.score.metrics.base import Metric
from ..formats.batches import batch_source, columnar_readable, table_writer

__all__ = ["takes_columnar_path", "score_saved_rows", "check_out", "TABLE_NAMES"]

TABLE_NAMES = ("metrics_table.parquet", "metrics_table.jsonl")


_OUTSIDE_CELLS = ("trace", "agent_data")
"""Cells of an outside format (a Databricks ``trace``, a Vertex ``agent_data``) that fill in the
answer: such rows are read whole by ``load_dataset``."""


def _has_trace_column(data: Any) -> bool:
    """Whether ``data`` has a column of :data:`_OUTSIDE_CELLS`."""
    if hasattr(data, "columns"):
        return any(c in data.columns for c in _OUTSIDE_CELLS)
    if hasattr(data, "column_names"):
        return any(c in data.column_names for c in _OUTSIDE_CELLS)
    if isinstance(data, list):
        return any(c in r for r in data[:100] for c in _OUTSIDE_CELLS)
    name = str(data).lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        names = pq.ParquetFile(data).schema_arrow.names
        return any(c in names for c in _OUTSIDE_CELLS)
    if name.endswith(".jsonl"):
        with open(data, "rb") as f:
            first = f.readline()
        return any(f'"{c}"'.encode() in first for c in _OUTSIDE_CELLS)
    return False


def takes_columnar_path(data: Any, metrics: Sequence[Metric], config: RunConfig) -> bool:
    """Whether the saved predictions in ``data`` are scored here, batch by batch: saved rows in a
    file or in memory (of any count) and no judged metric. Else they are loaded whole and scored
    by ``score_saved``."""
    if any(getattr(m, "is_async", False) for m in metrics):
        return False  # judged metrics score with the judge's concurrency on the row path
    try:
        return columnar_readable(data) and not _has_trace_column(data)
    except ImportError:
        return False
    except Exception:  # an unreadable file: the row path names the problem
        return False


def check_out(out: Path, config: RunConfig) -> None:
    """Refuse an ``out`` folder that already holds results (unless ``overwrite`` or ``resume``) or
    other files and no run record (unless ``overwrite``)."""
    held = [p.name for p in (out / n for n in (*TABLE_NAMES, "summary.json", "runs.jsonl")) if p.exists()]
    if held and not (config.overwrite or config.resume):
        raise RecordError(
            f"{out} already holds results ({', '.join(held)}); replace them with overwrite=True (--overwrite), "
            "or choose another out folder"
        )
    # On resume, the score table and summary this path wrote (the pair of them: its record) are replaced;
    # any other file, whatever its name, is the user's and refused as for any out folder.
    ours = held if config.resume and "summary.json" in held and any(n in held for n in TABLE_NAMES) else ()
    check_out_folder(out, overwrite=config.overwrite, kept=ours)


class _Progress:
    def __init__(self, total: int | None, enabled: bool) -> None:
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="scoring", unit="rows", unit_scale=True, leave=False, dynamic_ncols=True)

    def __call__(self, rows: int) -> None:
        if self.bar is not None:
            self.bar.update(rows)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def score_saved_rows(data: Any, metrics: Sequence[Metric], config: RunConfig, *, source: str | None = None) -> EvalResult:
    """Score the saved predictions in ``data`` batch by batch (see module doc)."""
    src = batch_source(data, source=source)
    out = config.out_dir
    writer = None
    kept: list[ScoredBatch] = []
    if out is not None:
        check_out(out, config)
        writer = table_writer(out / TABLE_NAMES[0 if parquet_available() else 1])
    progress = _Progress(src.total, config.progress)
    try:
        summary, skipped = score_batches(
            src.batches,
            metrics,
            source=src.source,
            workers=config.worker_count,
            on_batch=writer.write if writer is not None else kept.append,
            progress=progress,
        )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        progress.close()
    if skipped:
        warn_user(
            f"{src.source}: skipped {len(skipped)} conversation_scenario case(s) ({', '.join(list(skipped)[:5])}): "
            "they need a user simulator")
    totals = summary.summary()
    # The rows read again when explanations, cases or runs are asked for (see EvalResult.from_batches).
    again = lambda: batch_source(data, source=source).batches  # noqa: E731
    if writer is not None:
        assert out is not None
        table_path = writer.close()
        write_summary(out / "summary.json", totals)
        return EvalResult.from_batches(metrics, totals, source=src.source, config=config, table_path=table_path, skipped=skipped,
                              rows=again)
    names = [m.name for m in metrics]
    if src.frame is not None and not skipped:
        # Rows given in memory: the table is made now, from the rows as they are now.
        return EvalResult.from_batches(metrics, totals, source=src.source, config=config,
                                       table=_table(kept, names, src.frame), skipped=skipped, rows=again)
    # Rows read from a file: the table is made when first asked, so that a summary read alone loads
    # no pandas (nor the pyarrow pandas loads): a fresh process scoring 1,000 rows spends most of its
    # time importing them otherwise (issue #46).
    return EvalResult.from_batches(metrics, totals, source=src.source, config=config,
                                   make_table=lambda: _table(kept, names, None), skipped=skipped, rows=again)


def _table(kept: Sequence[ScoredBatch], names: Sequence[str], frame: Any) -> Any:
    """The metrics table (a pandas DataFrame) of the scored batches ``kept``: case ids and scores,
    what a metric adds after its score; rows given in memory (``frame``) keep their own columns."""
    import numpy as np
    import pandas as pd

    columns: dict[str, list[Any]] = {}
    for batch in kept:
        for name, column in batch.columns.items():
            columns.setdefault(name, []).append(column)
    scored = pd.DataFrame(
        {name: (np.concatenate(parts) if name != "case_id" else [x for p in parts for x in p]) for name, parts in columns.items()}
    )
    for name, extra in detail_columns(kept, list(names)).items():
        # What a metric said besides its number (extra columns, an error), after its score, as the row path wrote it.
        at = scored.columns.get_loc(f"{name}/score") + 1
        for offset, (key, column) in enumerate(extra.items()):
            scored.insert(at + offset, key, column)
    if frame is None:
        return scored
    # Rows given in memory: their own columns, then the scores (as Vertex AI's table has them).
    given = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    given = given.reset_index(drop=True).drop(columns=["case_id"], errors="ignore")
    added = [c for c in scored.columns if c != "case_id" and c not in given.columns]
    return pd.concat([scored[["case_id"]], given, scored[added]], axis=1)
