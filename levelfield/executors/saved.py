"""Scoring saved predictions at any size: a batch reader, the columnar scorer, a table writer.

``lf.evaluate(data, metrics=...)`` without an agent comes here when ``data`` is saved rows (a
``.jsonl``/``.parquet``/``.arrow``/``.csv`` file, a DataFrame, a pyarrow Table or a list of dicts):
the rows are read and scored a batch at a time (``workers=`` processes at once) and, with
``out=``, the metrics table is streamed to ``out/metrics_table.parquet`` beside ``summary.json``,
so a file larger than memory scores in bounded memory. See ``levelfield.core.score.batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.data.config import RunConfig
from ..core.errors import RecordError
from ..core.results.record import check_out_folder
from ..core.run.notices import warn_user
from ..core.results.result import ColumnarResult, parquet_available, write_summary
from ..core.score.batch import ScoredBatch, score_batches
from ..core.score.metrics.base import Metric
from ..formats.batches import batch_source, columnar_readable, table_writer

__all__ = ["takes_columnar_path", "score_saved_rows", "check_out", "TABLE_NAMES"]

TABLE_NAMES = ("metrics_table.parquet", "metrics_table.jsonl")


def _has_trace_column(data: Any) -> bool:
    """Databricks rows whose ``trace`` fills in the answer are read whole by ``load_dataset``."""
    if hasattr(data, "columns"):
        return "trace" in data.columns
    if hasattr(data, "column_names"):
        return "trace" in data.column_names
    if isinstance(data, list):
        return any("trace" in r for r in data[:100])
    name = str(data).lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return "trace" in pq.ParquetFile(data).schema_arrow.names
    if name.endswith(".jsonl"):
        with open(data, "rb") as f:
            first = f.readline()
        return b'"trace"' in first
    return False


COLUMNAR_ROWS = 20_000
"""From this many rows on, saved predictions are scored batch by batch; below it, row by row
with every metric's explanation and the full run record (where that costs under a few seconds)."""


def _at_least(data: Any, rows: int) -> bool:
    """Whether ``data`` holds at least ``rows`` rows, reading no more of a file than needed."""
    if not isinstance(data, (str, Path)):
        return len(data) >= rows if hasattr(data, "__len__") else data.num_rows >= rows
    name = str(data).lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.ParquetFile(data).metadata.num_rows >= rows
    if name.endswith((".arrow", ".feather", ".ipc")):
        import pyarrow as pa
        import pyarrow.ipc as ipc

        with pa.memory_map(str(data)) as source:
            return ipc.open_file(source).count_rows() >= rows
    seen = 0
    with open(data, "rb") as f:
        while seen < rows:
            block = f.read(1 << 24)
            if not block:
                break
            seen += block.count(b"\n")
    return seen >= rows


def takes_columnar_path(data: Any, metrics: Sequence[Metric], config: RunConfig) -> bool:
    """Whether the saved predictions in ``data`` are scored batch by batch: saved rows in a file
    or in memory, no judged metric, and either ``workers`` > 1 or at least :data:`COLUMNAR_ROWS`
    rows. Else they are scored row by row, with explanations (``score_saved``)."""
    if any(getattr(m, "is_async", False) for m in metrics):
        return False  # judged metrics score with the judge's concurrency on the row path
    try:
        if not columnar_readable(data) or _has_trace_column(data):
            return False
        return config.workers != 1 or _at_least(data, COLUMNAR_ROWS)
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
    check_out_folder(out, overwrite=config.overwrite)


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


def score_saved_rows(data: Any, metrics: Sequence[Metric], config: RunConfig, *, source: str | None = None) -> ColumnarResult:
    """Score the saved predictions in ``data`` batch by batch (see module doc)."""
    import pandas as pd

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
    if writer is not None:
        assert out is not None
        table_path = writer.close()
        write_summary(out / "summary.json", totals)
        return ColumnarResult(metrics, totals, source=src.source, config=config, table_path=table_path, skipped=skipped)
    columns: dict[str, list[Any]] = {}
    for batch in kept:
        for name, column in batch.columns.items():
            columns.setdefault(name, []).append(column)
    import numpy as np

    scored = pd.DataFrame(
        {name: (np.concatenate(parts) if name != "case_id" else [x for p in parts for x in p]) for name, parts in columns.items()}
    )
    table = scored
    if src.frame is not None and not skipped:
        # Rows given in memory: their own columns, then the scores (as Vertex AI's table has them).
        given = src.frame if isinstance(src.frame, pd.DataFrame) else pd.DataFrame(src.frame)
        given = given.reset_index(drop=True).drop(columns=["case_id"], errors="ignore")
        added = [c for c in scored.columns if c != "case_id" and c not in given.columns]
        table = pd.concat([scored[["case_id"]], given, scored[added]], axis=1)
    return ColumnarResult(metrics, totals, source=src.source, config=config, table=table, skipped=skipped)
