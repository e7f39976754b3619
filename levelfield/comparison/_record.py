"""A comparison saved and read back: its run record, tables and ``summary.json`` (:func:`save`), and
what ``Comparison.load`` builds a comparison from (:func:`read_saved`).

What a :class:`~levelfield.Comparison` writes (``save``, ``record_header``, ``summary_dict``,
``to_parquet``) is done here, on the comparison it is given (read through :class:`Recorded`, never
imported); a saved one is read back into its parts, the statistics being recomputed from the stored scores.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pandas as pd

from .._core.data.jsonsafe import to_jsonable
from .._core.errors import ConfigError, RecordError
from .._core.results.fingerprints import fingerprints_of
from .._core.results.record import RUNS_FILE, finish_journal, make_header, read_record, write_record
from .._core.results.result import record_status, results_from_record
from .._core.results.tables import parquet_available, table_to_parquet, write_table_files, write_tables_in_pages
from .._core.results.writing import write_text
from .._core.stats.config import StatsConfig
from .._core.stats.sequential import analysed_cases
from ._context import ComparisonContext

if TYPE_CHECKING:
    from .._core.data.config import RunConfig
    from .._core.data.cost_limit import BudgetReport
    from .._core.data.dataset import EvalDataset
    from .._core.results.result import EvalResult
    from .._core.score.metrics.base import Metric

__all__ = ["Recorded", "Saved", "settings", "summary_dict", "record_header", "evaluators", "a2a_preflight",
           "metrics_table", "to_parquet", "save", "read_saved", "faults_said", "FAULTED_FOLDER"]

FAULTED_FOLDER = "faulted"
"""Where ``compare(faults=..., out=DIR)`` records the runs under faults: ``DIR/faulted`` (the clean ones go to ``DIR``)."""


class Recorded(Protocol):
    """What saving reads of a comparison (``levelfield.Comparison`` has all of it)."""

    dataset: EvalDataset
    results: dict[str, EvalResult]
    metrics: list[Metric]
    stats: StatsConfig
    config: RunConfig
    kind: str
    baseline: Any
    saved_baseline: str | None
    evaluator_notes: list[str]
    stopped_early: dict[str, Any] | None
    not_started: list[tuple[str, str, int]]
    budget: BudgetReport | None
    tools_header: dict[str, Any] | None

    @property
    def agents(self) -> list[str]: ...
    @property
    def metric_names(self) -> list[str]: ...
    @property
    def trials(self) -> int: ...
    @property
    def summary(self) -> pd.DataFrame: ...
    @property
    def splits_noise(self) -> bool: ...
    def pairwise(self, metric: str) -> pd.DataFrame: ...
    def noise(self, metric: str | None = None) -> pd.DataFrame: ...


def settings(cmp: Recorded) -> dict[str, Any]:
    """The statistics settings of a comparison (saved in its run record)."""
    out = cmp.stats.to_dict()
    if cmp.stopped_early is not None:
        out["stopped_early"] = cmp.stopped_early
    if cmp.baseline is not None:
        out["baseline"] = cmp.baseline.name
    if cmp.evaluator_notes:
        out["evaluator_notes"] = list(cmp.evaluator_notes)
    if cmp.budget is not None:
        out["budget"] = cmp.budget.to_dict()
    return out


def summary_dict(cmp: Recorded) -> dict[str, Any]:
    """Everything ``summary.json`` holds: settings, the summary rows and every pairwise table."""
    return to_jsonable({
        "dataset": cmp.dataset.source,
        "cases": len(cmp.dataset),
        "agents": cmp.agents,
        "metrics": cmp.metric_names,
        "trials": cmp.trials,
        **settings(cmp),
        "summary": cmp.summary.to_dict(orient="index"),
        "pairwise": {m: cmp.pairwise(m).to_dict(orient="records") for m in cmp.metric_names},
        **({"noise": cmp.noise().to_dict(orient="records")} if cmp.splits_noise else {}),
    })


def record_header(cmp: Recorded, *, status: str | None = None) -> dict[str, Any]:
    """The run-record header of a comparison (see ``levelfield._core.results.record``); its status is
    ``complete``, or ``budget_exhausted`` when a spending limit kept runs from starting."""
    return make_header(
        source=cmp.dataset.source,
        fingerprints=fingerprints_of(cmp.dataset),
        agents=cmp.agents,
        metrics=cmp.metrics,
        options=cmp.config.to_dict(),
        kind=cmp.kind,
        status=status or record_status(cmp.not_started),
        settings=settings(cmp),
        tools=cmp.tools_header,
        a2a_preflight=a2a_preflight(cmp),
        evaluators=evaluators(cmp),
    )


def evaluators(cmp: Recorded) -> dict[str, Any]:
    """Metric name -> the evaluator that gave its scores (``levelfield._core.results.provenance.Evaluator``):
    the agents' run (a baseline joined with other evaluators is labelled by ``evaluator_notes``)."""
    base = cmp.baseline.name if cmp.baseline is not None else cmp.saved_baseline
    ran = [r for a, r in cmp.results.items() if a != base] or list(cmp.results.values())
    return ran[0].evaluators if ran else {}


def a2a_preflight(cmp: Recorded) -> dict[str, dict[str, Any]]:
    """Each A2A agent's conformance preflight (``Preflight.to_dict()``) by agent name, when one ran."""
    return {name: found for r in cmp.results.values() for name, found in getattr(r, "a2a_preflight", {}).items()}


def metrics_table(cmp: Recorded) -> pd.DataFrame:
    """One row per agent, case and trial: ``agent``, ``trial``, then each agent's ``EvalResult.metrics_table`` columns."""
    tables = []
    for agent, result in cmp.results.items():
        table = result.metrics_table.copy()
        if "trial" not in table:
            table.insert(1, "trial", [r.trial for r in result.runs])
        table.insert(0, "agent", agent)
        tables.append(table)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def to_parquet(cmp: Recorded, path: str | Path, *, table: Literal["runs", "summary"] = "runs") -> Path:
    """Write the per-run table (``table="runs"``) or the per-agent ``summary`` (``table="summary"``,
    agent as a column) as Parquet; needs ``levelfield[parquet]``."""
    if table == "runs":
        return table_to_parquet(metrics_table(cmp), path)
    if table == "summary":
        return table_to_parquet(cmp.summary.reset_index(), path)
    raise ConfigError(f"to_parquet(table={table!r}): use 'runs' (one row per run) or 'summary' (one row per agent)")


def save(cmp: Recorded, directory: str | Path) -> dict[str, Path]:
    """Write ``runs.jsonl`` (the run record), ``metrics_table.csv`` and ``summary.json``; with pyarrow
    installed, ``metrics_table.parquet`` and ``summary.parquet`` too."""
    out = Path(directory)  # each writer below makes the folder (or names why it cannot)
    paths = {
        "runs": out / RUNS_FILE,
        "metrics_table": out / "metrics_table.csv",
        "summary": out / "summary.json",
    }
    journals = {r.journal for r in cmp.results.values()}
    journal = next(iter(journals)) if len(journals) == 1 else None
    if journal is not None and paths["runs"].resolve() == journal.resolve():
        # The journal holds every run with its recorded scores: with its final header, it is the record.
        moved = finish_journal(paths["runs"], record_header(cmp))
        for result in cmp.results.values():
            result.journal_moved(moved)
    else:
        entries = [(run, row) for result in cmp.results.values() for run, row in zip(result.runs, result.recorded_scores)]
        write_record(paths["runs"], record_header(cmp), list(cmp.dataset), fingerprints_of(cmp.dataset), entries)
    if all(r.streamed for r in cmp.results.values()):
        paths.update(write_tables_in_pages(lambda size: _table_pages(cmp, size), out, trials=-1))  # a page at a time
    else:
        paths.update(write_table_files(metrics_table(cmp), paths["metrics_table"],
                                       out / "metrics_table.parquet" if parquet_available() else None))
    if parquet_available():
        paths["summary_parquet"] = to_parquet(cmp, out / "summary.parquet", table="summary")
    write_text(paths["summary"], json.dumps(summary_dict(cmp), indent=2, ensure_ascii=False))
    return paths


def _table_pages(cmp: Recorded, size: int) -> Iterator[list[dict[str, Any]]]:
    """The rows of the metrics table, a page of journaled runs at a time, agent after agent."""
    for agent, result in cmp.results.items():
        for rows in result.table_pages(size, explain=False):
            yield [{"agent": agent, **row} for row in rows]


@dataclass(frozen=True)
class Saved:
    """A saved comparison read back into what ``Comparison(...)`` takes; ``faulted``: the folder of the
    runs under faults recorded beside it (``compare(faults=..., out=...)``), to load too."""

    dataset: EvalDataset
    results: dict[str, EvalResult]
    metrics: list[Metric]
    stats: StatsConfig
    config: RunConfig
    context: ComparisonContext
    faulted: Path | None


def read_saved(directory: str | Path) -> Saved:
    """Read a saved comparison (or evaluation) from its run record. An interrupted journal reads with
    the runs it has; ``context.missing_runs`` lists the rest."""
    record = read_record(directory)
    early = (record.header.get("settings") or {}).get("stopped_early")
    if early and early.get("stopped"):
        # The results of a sequential comparison hold the cases it analysed; the journal also
        # keeps the runs of later cases that were in flight at the stop.
        keep = set(analysed_cases(early, [c.case_id for c in record.cases if c.conversation_scenario is None]))
        record = dataclasses.replace(record, runs={k: v for k, v in record.runs.items() if k[1] in keep})
    results = results_from_record(record)
    if not results:
        raise RecordError(f"{record.path}: names no agent")
    first = next(iter(results.values()))
    saved = dict(record.header.get("settings") or {})
    try:
        stats = StatsConfig.from_dict(saved)
    except ConfigError as exc:
        raise RecordError(f"{record.path}: bad settings in the header ({exc})") from None
    tools = record.header.get("tools")
    levelled = isinstance(tools, dict)
    context = ComparisonContext(
        kind=str(record.header.get("run_kind") or "compare"),  # saved again, it keeps what made it
        saved_baseline=saved.get("baseline"),
        evaluator_notes=[str(n) for n in saved.get("evaluator_notes") or []],
        stopped_early=saved.get("stopped_early"),
        missing_runs=record.missing(),
        complete=record.complete,
        status=record.header.get("status"),
        tools_header=tools if levelled else None,
        tool_levelling={a: r.tool_levelling for a, r in results.items() if r.tool_levelling is not None} if levelled else None,
    )
    faulted = record.path.parent / FAULTED_FOLDER
    # compare(faults=...) recorded the runs under faults beside the clean ones: they are read back too.
    beside = faulted.is_dir() and not (isinstance(tools, dict) and tools.get("faults"))
    return Saved(first.dataset, results, list(first.metrics), stats, first.config, context, faulted if beside else None)


def faults_said(tools_header: dict[str, Any] | None) -> str:
    """How the faults of a loaded faulted comparison were made, in the words of ``repr(lf.Faults(...))``."""
    spec = (tools_header or {}).get("faults") or {}
    return (f"Faults(rate={spec.get('rate', 0):g}, kinds={tuple(spec.get('kinds') or ())!r}, "
            f"seed={spec.get('seed')}, tools={spec.get('tools')!r})")
