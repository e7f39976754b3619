"""Results of an evaluation (:class:`EvalResult`): the per-row table, the summary, the runs, and
their export; a saved record read back as results (:func:`results_from_record`).

Where the rows live is the source's business (:mod:`.source`): runs held in memory, saved
predictions scored batch by batch, runs in the journal only. The result asks its source and adds
what every result has (metrics, options, provenance, judge corrections, the record header)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.config import RunConfig
from ..data.cost_limit import BudgetReport
from ..data.dataset import EvalDataset
from ..data.jsonsafe import to_jsonable
from ..data.types import AgentRun
from ..errors import RecordError
from ..score.metrics.base import Metric, Score, score_columns
from .columns import CostColumns, RunColumns
from .fingerprints import fingerprints_of
from .held import HeldRuns
from .journaled import JournaledRuns
from .provenance import Evaluator, evaluators_from_header, evaluators_of
from .record import Record, make_header, metrics_from_specs, read_record
from .saved_batches import SavedBatches
from .saved_run import SAVED_AGENT
from .source import RowSource
from .tables import table_to_csv, table_to_parquet
from .writing import replacing

# Annotations only: a result of saved rows whose summary is all that is read never loads pandas (issue #46).
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .table_ahead import TableAhead

__all__ = ["EvalResult", "results_from_record", "record_status", "BUDGET_EXHAUSTED"]


class EvalResult:
    """The outcome of ``evaluate``: one row per case and trial, in dataset order.

    ``scores[i]`` holds run ``i``'s scores as ``<metric>/...`` columns; the ``Score`` objects
    behind them are ``row_scores[i]`` (metric name -> Score). ``save(dir)`` writes the run record
    and tables, ``EvalResult.load(dir)`` reads them back with the same summary.

    One type for every result. Runs scored as they finish hold their runs and Scores. Saved
    predictions scored batch by batch (:meth:`from_batches`) hold a table of scores (in memory or
    in a file) and the summary of running aggregates; what the batch scorer leaves out is computed
    when first asked, from the saved rows read again: per-row explanations (:meth:`explain`,
    :meth:`with_explanations`, ``row_scores``), the cases and runs with the saved answers
    (``dataset``, ``runs``). Without the rows (a table read back alone), ``runs`` and ``row_scores``
    come from the table: no answers, no explanations.
    """

    def __init__(
        self,
        dataset: EvalDataset,
        runs: Sequence[AgentRun],
        scores: Sequence[Mapping[str, Score]],
        metrics: Sequence[Metric],
        *,
        agent_name: str | None = None,
        scored_saved_predictions: bool = False,
        config: RunConfig | None = None,
    ) -> None:
        self._start(metrics, agent_name, scored_saved_predictions, config, dataset.source)
        self._source: RowSource = HeldRuns(self, dataset, runs, scores)

    def _start(self, metrics: Sequence[Metric], agent_name: str | None, scored_saved_predictions: bool,
               config: RunConfig | None, source: str) -> None:
        """The fields every result has, whatever holds its rows."""
        self.metrics = list(metrics)
        self.agent_name = agent_name
        self.scored_saved_predictions = scored_saved_predictions
        self.config = config or RunConfig()
        self.source = source
        """Where the cases came from (a file, ``"dataset"``, ``"DataFrame"``)."""
        self.skipped: dict[str, str] = {}
        self.limits: list[Any] = []
        self.a2a_preflight: dict[str, dict[str, Any]] = {}
        """The A2A conformance preflight of the agent (``Preflight.to_dict()``) by its name, when one ran."""
        """What each endpoint's limit did (a ``LimitStats`` by endpoint): the concurrency it
        ran at, rate-limited answers, time waiting on limits; empty for saved predictions."""
        """``{case_id: reason}`` for cases that were not run (e.g. conversation scenarios)."""
        self.not_started: list[tuple[str, str, int]] = []
        """(agent, case id, trial) of the runs a spending limit (``max_cost_usd``) kept from starting;
        ``resume=True`` with a larger limit runs them."""
        self.budget: BudgetReport | None = None
        self.tools_header: dict[str, Any] | None = None
        """What levelled the agent's tools (the run record's ``tools`` header field; ``levelfield.tools``)."""
        self.tool_levelling: dict[str, Any] | None = None
        """The agent's tools levelled or not (``levelled``, ``how`` | ``why``) and its calls counted by
        source and fault (``counts``, see ``levelfield.tools.summary.tool_counts``); None: not levelled."""
        """With ``max_cost_usd``: the limit, what was spent and is left, and per agent what its runs
        spent and how many the limit kept from starting (``str(result.budget)`` says it in words)."""
        self.judge_corrections: dict[str, Any] = {}
        """Metric name -> ``JudgeCorrection`` when ``evaluate(..., human_labels=...)`` corrected a judged metric."""
        self._evaluators: dict[str, Evaluator] | None = None
        """What gave the scores as recorded (a result read back, a baseline's kept scores); None: the metrics' own."""
        self.table_path: Path | None = None
        """Where the metrics table was streamed (saved predictions with ``out=``), when it was."""
        self._scores: list[dict[str, Any]] | None = None

    @classmethod
    def from_batches(
        cls,
        metrics: Sequence[Metric],
        summary: Mapping[str, Any],
        *,
        source: str,
        config: RunConfig | None = None,
        table: pd.DataFrame | None = None,
        make_table: Callable[[], pd.DataFrame] | None = None,
        table_path: Path | None = None,
        skipped: Mapping[str, str] | None = None,
        rows: Callable[[], Iterable[Any]] | None = None,
    ) -> EvalResult:
        """The result of saved predictions scored batch by batch: their ``table`` (or ``make_table()``
        making it when first asked, or where it was written, ``table_path``) and ``summary``; ``rows()``
        gives the saved rows again, batch by batch, for what
        is computed when asked."""
        result = cls.__new__(cls)
        result._start(metrics, None, True, config, source)
        result.table_path = table_path
        result.skipped = dict(skipped or {})
        result._source = SavedBatches(result, summary, table=table, make_table=make_table, table_path=table_path,
                                      rows=rows)
        return result

    @classmethod
    def from_journal(
        cls,
        dataset: EvalDataset,
        columns: RunColumns,
        metrics: Sequence[Metric],
        journal: Path,
        *,
        agent_name: str,
        config: RunConfig | None = None,
    ) -> EvalResult:
        """The result of runs that went to the ``journal`` as they finished and were not held: the
        summary and the statistics come from ``columns`` (a few numbers a run); the runs, their
        scores and the tables are read back from the journal when asked, a page at a time when saved."""
        result = cls.__new__(cls)
        result._start(metrics, agent_name, False, config, dataset.source)
        result._source = JournaledRuns(result, dataset, columns, journal)
        return result

    def _held(self) -> RowSource:
        """The source with every run in memory: runs in the journal only are read back, once, and
        held from then on (the source that read them is replaced by what it read)."""
        self._source = self._source.read_back()
        return self._source

    @property
    def streamed(self) -> bool:
        """Whether the runs live in the journal only (:meth:`from_journal`) and are not read back yet."""
        return self._source.streamed

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def dataset(self) -> EvalDataset:
        """The cases, in order (read from the saved rows when first asked, for saved predictions)."""
        return self._source.dataset()

    @property
    def runs(self) -> list[AgentRun]:
        """Every run (``AgentRun``), one per table row (saved answers read again when first asked)."""
        return self._held().runs()

    @property
    def row_scores(self) -> list[dict[str, Score]]:
        """Each run's Scores by metric, with explanations (those the engine leaves out computed when first asked)."""
        return self._held().row_scores()

    @property
    def recorded_scores(self) -> list[dict[str, Score]]:
        """Each run's Scores as the engine gave them (explanations it leaves out are not made): what
        the run record stores, as the journal did while the runs finished."""
        return self._held().engine_rows()

    @property
    def scores(self) -> list[dict[str, Any]]:
        """Each run's scores as ``<metric>/score``, ``/explanation``, ... columns (see ``Score.columns``),
        as the metrics table holds them (explanations the engine leaves out are in :meth:`with_explanations`)."""
        if self._scores is None:
            self._scores = [score_columns(row) for row in self._held().engine_rows()]
        return self._scores

    @property
    def metrics_table(self) -> pd.DataFrame:
        """One row per case and trial: dataset columns, the agent's answer, latency, failure, scores.

        Saved predictions scored batch by batch: the rows' own columns when they were in memory,
        else ``case_id``, ``failure``, ``latency_in_seconds``; then ``<metric>/score`` and what a
        metric adds (extras, errors), without explanations (see :meth:`with_explanations`)."""
        return self._held().metrics_table()

    def table_pages(self, size: int, *, explain: bool = True) -> Iterator[list[dict[str, Any]]]:
        """The rows of the metrics table (with explanations, or as the engine gave the scores), a
        page of journaled runs read back at a time (see :func:`~.tables.write_tables_in_pages`)."""
        assert isinstance(self._source, JournaledRuns), "table_pages: only runs that live in the journal are paged"
        return self._source.table_pages(size, explain=explain)

    def case_runs(self, case_id: str) -> list[AgentRun]:
        """The runs of one case, in trial order. Runs that live in the journal are read back a page
        of cases at a time (the page around this case, kept until a case outside it is asked for),
        so asking for every case in order reads the journal once and holds one page."""
        return self._source.case_runs(case_id)

    @property
    def journal(self) -> Path | None:
        """The journal that holds every run of this result with its recorded scores, when one does:
        ``save`` to its folder keeps it as the record; runs not held (:attr:`streamed`) are read from it."""
        return self._source.journal

    def recorded_in(self, journal: Path, ahead: TableAhead | None = None) -> None:
        """Say that ``journal`` holds exactly this result's runs with the scores :attr:`recorded_scores`
        gives (the engine journaled each as it finished): ``save`` then keeps it rather than writing
        every run again. ``ahead``: what made the table rows of the runs as they were journaled
        (the tables take the rows made of these very runs and scores)."""
        self._source.journal = journal
        if ahead is not None and isinstance(self._source, HeldRuns):
            self._source.made_ahead(ahead)

    def journal_moved(self, by: int) -> None:
        """The journal's lines moved ``by`` bytes (its header was rewritten: ``finish_journal``)."""
        self._source.journal_moved(by)

    @property
    def summary_metrics(self) -> dict[str, Any]:
        """``row_count``, ``<metric>/mean``, ``<metric>/std``, ``<metric>/nan_count``, latency, failures, tokens
        (and ``<metric>/corrected_mean``... for judge-corrected metrics).

        A failed run is NaN and counted in ``nan_count``: ``<metric>/mean`` leaves it out.
        ``<metric>/mean_failed_as_zero`` is the mean with every failed run scoring 0 where the
        metric applies to its case (the rule ``compare`` uses by default), so both are at hand.
        """
        summary = self._source.summary()
        if self.judge_corrections:
            return {**summary, **{k: v for c in self.judge_corrections.values() for k, v in c.summary_items().items()}}
        return summary

    def run_failures(self) -> np.ndarray:
        """Whether each run failed, in table order (without reading journaled runs back)."""
        return self._source.run_failures()

    def run_cases(self) -> tuple[list[str], np.ndarray]:
        """Each run's case id and trial, in table order (without reading journaled runs back)."""
        return self._source.run_cases()

    def score_values(self, metric: str) -> np.ndarray:
        """One metric's score of each run, in table order (NaN: not scored)."""
        return self._source.score_values(metric)

    def cost_columns(self) -> CostColumns:
        """Latency, failure, tokens and dollars of each run, in table order for runs held (journaled
        runs: in the order they finished; see :meth:`run_order`)."""
        return self._source.cost_columns()

    def run_costs(self) -> dict[str, Any]:
        """What the runs cost (:func:`~.summary.run_costs`): latency, failures, tokens, dollars."""
        return self._source.run_costs()

    def limit_totals(self) -> tuple[int, float]:
        """Rate-limited answers the runs met and the seconds they waited on limits, in all."""
        return self._source.limit_totals()

    def run_order(self) -> np.ndarray | None:
        """Where each row of :meth:`cost_columns` is in table order (None: already in table order)."""
        return self._source.run_order()

    @property
    def failures(self) -> list[AgentRun]:
        return self._source.failures()

    def explain(self, case_id: str) -> dict[str, Score]:
        """The scores of one case (its first trial) with their explanations (``"matched 1/2 reference
        calls; missing get_weather"``), by metric; for saved predictions, computed for this case
        only, when first asked."""
        return self._source.explain(str(case_id))

    def with_explanations(self, case_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """The metrics table with a ``<metric>/explanation`` column after each score column, filled
        for ``case_ids`` (every case when None). Runs scored as they finish have them already; for
        saved predictions scored batch by batch they are computed now, for the cases asked."""
        return self._held().with_explanations(case_ids)

    def failed_as_zero(self, metric: Metric, values: np.ndarray) -> np.ndarray:
        """``values`` (one per run, in run order) with each failed run's score set to 0 where ``metric`` applies."""
        return self._source.failed_as_zero(metric, values)

    def __repr__(self) -> str:
        # Counted from the runs, not the summary: asyncio.run reprs the task holding the result
        # when it restores the SIGINT handler, and a repr must not compute a whole summary.
        return self._source.describe(self.agent_name)

    # -- provenance --------------------------------------------------------------------------

    @property
    def evaluators(self) -> dict[str, Evaluator]:
        """Metric name -> the ``Evaluator`` that gave its scores
        (metric name and version, judge model and settings, prompt and rubric hashes, calibration).

        A result read back has the ones its record kept; a metric its record does not name (a record
        written before evaluators were kept) is absent: its provenance is unknown."""
        if self._evaluators is not None:
            return dict(self._evaluators)
        found = evaluators_of(self.metrics)
        for name, correction in self.judge_corrections.items():
            if name in found and hasattr(correction, "sensitivity"):
                found[name] = found[name].with_calibration(to_jsonable({
                    "kind": "judge_correction", "human_labels": correction.labeled, "sensitivity": correction.sensitivity,
                    "specificity": correction.specificity, "kappa": correction.kappa}))
        return found

    # -- saving and loading ------------------------------------------------------------------

    def record_header(self, *, status: str | None = None) -> dict[str, Any]:
        """The run-record header of this result (the first line of ``runs.jsonl``, docs/guide/running.md); its status
        is ``complete``, or ``budget_exhausted`` when runs were not started."""
        return make_header(
            source=self.dataset.source,
            fingerprints=fingerprints_of(self.dataset),
            agents=[self.agent_name or SAVED_AGENT],
            metrics=self.metrics,
            options=self.config.to_dict(),
            kind="evaluate",
            status=status or record_status(self.not_started),
            settings={"scored_saved_predictions": self.scored_saved_predictions,
                      **({"budget": self.budget.to_dict()} if self.budget is not None else {}),
                      **({"limits": [s.to_dict() for s in self.limits]} if self.limits else {})},
            tools=self.tools_header,
            a2a_preflight=self.a2a_preflight,
            evaluators=self.evaluators,
        )

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``runs.jsonl`` (the run record), ``metrics_table.csv`` and ``summary.json`` into ``directory``,
        and ``metrics_table.parquet`` too when pyarrow is installed; the tables hold the explanations.

        Saved predictions whose rows cannot be read again (a table read back alone) have no runs
        to record: ``metrics_table.parquet`` (``.csv`` without pyarrow) and ``summary.json``."""
        return self._source.save(Path(directory), self.record_header, lambda: self.summary_metrics)

    @classmethod
    def load(cls, location: str | Path, *, agent: str | None = None) -> EvalResult:
        """Read a result back from a saved folder (or its ``runs.jsonl``); the summary is recomputed
        from the stored scores. A record of several agents needs ``agent=`` (or ``Comparison.load``)."""
        record = read_record(location)
        agents = record.agents
        if agent is None:
            if len(agents) != 1:
                raise RecordError(
                    f"{record.path}: holds {len(agents)} agents ({', '.join(agents)}); pick one with agent=... "
                    "or read them all with lf.Comparison.load"
                )
            agent = agents[0]
        elif agent not in agents:
            raise RecordError(f"{record.path}: no agent {agent!r}; it has: {', '.join(agents)}")
        return results_from_record(record)[agent]

    def _records(self) -> list[dict[str, Any]]:
        records = []
        for run, scores in zip(self.runs, map(score_columns, self.row_scores)):
            record = run.model_dump(mode="python")
            record["scores"] = scores
            records.append(to_jsonable(record))
        return records

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every run (output, trajectory, latency, failure, scores), one JSON object a line."""
        path = Path(path)
        with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as f:
            for record in self._records():
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path

    def to_csv(self, path: str | Path) -> Path:
        """Write the metrics table; trajectory cells as JSON so ``load_dataset`` reads them back."""
        path = Path(path)
        table_to_csv(self.metrics_table, path)
        return path

    def to_parquet(self, path: str | Path) -> Path:
        """Write the metrics table as Parquet (needs ``levelfield[parquet]``); trajectory and other
        list or dict cells as JSON text, so ``load_dataset`` reads them back exactly."""
        return table_to_parquet(self.metrics_table, path)


def results_from_record(record: Record) -> dict[str, EvalResult]:
    """One EvalResult per agent of a record, runs in dataset order then trial order; the metrics
    rebuilt from their specs (``requires`` kept), the scores as stored."""
    dataset = EvalDataset(record.cases, source=(record.header.get("dataset") or {}).get("source", str(record.path)))
    metrics = metrics_from_specs(record.header.get("metrics") or [])
    options = dict(record.header.get("options") or {})
    if options.get("executor") not in (None, "local", "ray"):
        del options["executor"]  # an executor object, recorded as its repr: the header keeps what it was
    config = RunConfig(**{k: v for k, v in options.items() if k in RunConfig.__dataclass_fields__ and k not in ("resume", "overwrite")})
    saved = bool((record.header.get("settings") or {}).get("scored_saved_predictions"))
    order = {c.case_id: i for i, c in enumerate(record.cases)}
    results: dict[str, EvalResult] = {}
    for agent in record.agents:
        entries = sorted(
            ((run, scores) for (a, _, _), (run, scores) in record.runs.items() if a == agent),
            key=lambda e: (order.get(e[0].case_id, len(order)), e[0].trial),
        )
        rows = [scores if scores is not None else {m.name: Score(math.nan) for m in metrics} for _, scores in entries]
        results[agent] = EvalResult(
            dataset, [run for run, _ in entries], rows, metrics,
            agent_name=None if saved else agent, scored_saved_predictions=saved, config=config,
        )
        if record.header.get("status") == BUDGET_EXHAUSTED:
            results[agent].not_started = [key for key in record.missing() if key[0] == agent]
        budget = (record.header.get("settings") or {}).get("budget")
        if budget:
            results[agent].budget = BudgetReport.from_dict(budget)
        tools = record.header.get("tools")
        if isinstance(tools, dict):
            from .tool_counts import tool_counts

            results[agent].tools_header = tools
            note = dict((tools.get("agents") or {}).get(agent) or {"levelled": False, "why": "not recorded"})
            note["counts"] = tool_counts(results[agent].runs)
            results[agent].tool_levelling = note
        preflight = (record.header.get("a2a_preflight") or {}).get(agent)
        if isinstance(preflight, dict):
            results[agent].a2a_preflight = {agent: preflight}
        results[agent]._evaluators = evaluators_from_header(record.header) or {}
    return results


BUDGET_EXHAUSTED = "budget_exhausted"
"""A record's status when a spending limit kept some planned runs from starting (they are absent)."""


def record_status(not_started: Sequence[Any]) -> str:
    """A saved record's status: ``complete``, or ``budget_exhausted`` when planned runs never started."""
    return BUDGET_EXHAUSTED if not_started else "complete"
