"""A comparison saved and read back: its run record, tables and ``summary.json``, and ``Comparison.load``.

:class:`ComparisonRecord` is a base class of :class:`~levelfield.Comparison`: what it
writes (``save``, ``record_header``, ``summary_dict``, ``to_parquet``) and how it reads a saved one
back (``load``), the statistics being recomputed from the stored scores.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from typing_extensions import Self

from .._core.data.jsonsafe import to_jsonable
from .._core.errors import ConfigError, RecordError
from .._core.results.fingerprints import fingerprints_of
from .._core.results.record import RUNS_FILE, finish_journal, make_header, read_record, write_record
from .._core.results.result import record_status, results_from_record
from .._core.results.tables import parquet_available, table_to_parquet, write_table_files, write_tables_in_pages
from .._core.results.writing import write_text
from .._core.stats.config import StatsConfig
from .._core.stats.sequential import analysed_cases

__all__ = ["ComparisonRecord"]


class ComparisonRecord:
    """Saving and loading: the part of a :class:`~levelfield.Comparison` that writes and reads its record."""

    def settings(self) -> dict[str, Any]:
        """The statistics settings of this comparison (saved in its run record)."""
        settings = self.stats.to_dict()
        if self.stopped_early is not None:
            settings["stopped_early"] = self.stopped_early
        if self.baseline is not None:
            settings["baseline"] = self.baseline.name
        if self.evaluator_notes:
            settings["evaluator_notes"] = list(self.evaluator_notes)
        if self.budget is not None:
            settings["budget"] = self.budget.to_dict()
        return settings

    def summary_dict(self) -> dict[str, Any]:
        """Everything ``summary.json`` holds: settings, the summary rows and every pairwise table."""
        return to_jsonable({
            "dataset": self.dataset.source,
            "cases": len(self.dataset),
            "agents": self.agents,
            "metrics": self.metric_names,
            "trials": self.trials,
            **self.settings(),
            "summary": self.summary.to_dict(orient="index"),
            "pairwise": {m: self.pairwise(m).to_dict(orient="records") for m in self.metric_names},
            **({"noise": self.noise().to_dict(orient="records")} if self.splits_noise else {}),
        })

    def record_header(self, *, status: str | None = None) -> dict[str, Any]:
        """The run-record header of this comparison (see ``levelfield._core.results.record``); its
        status is ``complete``, or ``budget_exhausted`` when a spending limit kept runs from starting."""
        return make_header(
            source=self.dataset.source,
            fingerprints=fingerprints_of(self.dataset),
            agents=self.agents,
            metrics=self.metrics,
            options=self.config.to_dict(),
            kind=self.kind,
            status=status or record_status(self.not_started),
            settings=self.settings(),
            tools=self.tools_header,
            a2a_preflight=self.a2a_preflight,
            evaluators=self.evaluators,
        )

    @property
    def evaluators(self) -> dict[str, Any]:
        """Metric name -> the evaluator that gave its scores (``levelfield._core.results.provenance.Evaluator``):
        the agents' run (a baseline joined with other evaluators is labelled by :attr:`evaluator_notes`)."""
        base = self.baseline.name if self.baseline is not None else self.saved_baseline
        ran = [r for a, r in self.results.items() if a != base] or list(self.results.values())
        return ran[0].evaluators if ran else {}

    @property
    def a2a_preflight(self) -> dict[str, dict[str, Any]]:
        """Each A2A agent's conformance preflight (``Preflight.to_dict()``) by agent name, when one ran."""
        return {name: found for r in self.results.values() for name, found in getattr(r, "a2a_preflight", {}).items()}

    @property
    def metrics_table(self) -> pd.DataFrame:
        """One row per agent, case and trial: ``agent``, ``trial``, then each agent's ``EvalResult.metrics_table`` columns."""
        tables = []
        for agent, result in self.results.items():
            table = result.metrics_table.copy()
            if "trial" not in table:
                table.insert(1, "trial", [r.trial for r in result.runs])
            table.insert(0, "agent", agent)
            tables.append(table)
        return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()

    def to_parquet(self, path: str | Path, *, table: Literal["runs", "summary"] = "runs") -> Path:
        """Write the per-run table (``table="runs"``, :attr:`metrics_table`) or the per-agent
        ``summary`` (``table="summary"``, agent as a column) as Parquet; needs ``levelfield[parquet]``."""
        if table == "runs":
            return table_to_parquet(self.metrics_table, path)
        if table == "summary":
            return table_to_parquet(self.summary.reset_index(), path)
        raise ConfigError(f"to_parquet(table={table!r}): use 'runs' (one row per run) or 'summary' (one row per agent)")

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``runs.jsonl`` (the run record), ``metrics_table.csv`` and ``summary.json``; with pyarrow
        installed, ``metrics_table.parquet`` and ``summary.parquet`` too. The HTML report is the report
        package's job: ``lf.report.write(cmp, path)``."""
        out = Path(directory)  # each writer below makes the folder (or names why it cannot)
        paths = {
            "runs": out / RUNS_FILE,
            "metrics_table": out / "metrics_table.csv",
            "summary": out / "summary.json",
        }
        journals = {r.journal for r in self.results.values()}
        if len(journals) == 1 and None not in journals and paths["runs"].resolve() == next(iter(journals)).resolve():
            # The journal holds every run with its recorded scores: with its final header, it is the record.
            moved = finish_journal(paths["runs"], self.record_header())
            for result in self.results.values():
                result.journal_moved(moved)
        else:
            entries = [(run, row) for result in self.results.values() for run, row in zip(result.runs, result.recorded_scores)]
            write_record(paths["runs"], self.record_header(), list(self.dataset), fingerprints_of(self.dataset), entries)
        if all(r.streamed for r in self.results.values()):
            paths.update(write_tables_in_pages(self._table_pages, out, trials=-1))  # a page of runs read back at a time
        else:
            paths.update(write_table_files(self.metrics_table, paths["metrics_table"],
                                           out / "metrics_table.parquet" if parquet_available() else None))
        if parquet_available():
            paths["summary_parquet"] = self.to_parquet(out / "summary.parquet", table="summary")
        write_text(paths["summary"], json.dumps(self.summary_dict(), indent=2, ensure_ascii=False))
        return paths

    def _table_pages(self, size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows of :attr:`metrics_table`, a page of journaled runs at a time, agent after agent."""
        for agent, result in self.results.items():
            for rows in result.table_pages(size, explain=False):
                yield [{"agent": agent, **row} for row in rows]

    @classmethod
    def load(cls, directory: str | Path) -> Self:
        """Re-read a saved comparison (or evaluation) from its run record, e.g. to re-render its report.

        Summaries and tests are recomputed from the stored scores, so they equal the ones before
        saving. An interrupted journal loads with the runs it has; ``missing_runs`` lists the rest.
        """
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
        settings = dict(record.header.get("settings") or {})
        try:
            cmp = cls(
                first.dataset,
                results,
                first.metrics,
                trials=record.trials,
                stats=StatsConfig.from_dict(settings),
                config=first.config,
            )
        except ConfigError as exc:
            raise RecordError(f"{record.path}: bad settings in the header ({exc})") from None
        cmp.kind = str(record.header.get("run_kind") or cmp.kind)  # saved again, it keeps what made it
        cmp.saved_baseline = settings.get("baseline")
        cmp.evaluator_notes = [str(n) for n in settings.get("evaluator_notes") or []]
        cmp.stopped_early = settings.get("stopped_early")
        cmp.missing_runs = record.missing()
        cmp.complete = record.complete
        cmp._status = record.header.get("status")
        if isinstance(record.header.get("tools"), dict):
            cmp.tools_header = record.header["tools"]
            cmp.tool_levelling = {a: r.tool_levelling for a, r in results.items() if r.tool_levelling is not None}
        faulted = record.path.parent / "faulted"
        if faulted.is_dir() and not (isinstance(cmp.tools_header, dict) and cmp.tools_header.get("faults")):
            # compare(faults=...) recorded the runs under faults beside the clean ones: read them back too.
            from ._robustness import robustness_of

            cmp.faulted = cls.load(faulted)
            spec = (cmp.faulted.tools_header or {}).get("faults") or {}
            said = (f"Faults(rate={spec.get('rate', 0):g}, kinds={tuple(spec.get('kinds') or ())!r}, "
                    f"seed={spec.get('seed')}, tools={spec.get('tools')!r})")
            cmp.robustness = robustness_of(cmp, cmp.faulted, faults=said, seed=cmp.seed)
        return cmp
