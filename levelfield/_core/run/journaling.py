"""Open an evaluation's journal in its out folder: a new one, or the one it resumes and the runs that one holds.

A record already in the folder is an error unless ``resume`` (continue it) or ``overwrite``
(replace it); resuming warns about what changed since its runs were journaled (references,
metrics). The engine (``levelfield._core.run.engine``) writes each finished run to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.config import RunConfig
from ..data.dataset import EvalDataset
from ..data.types import AgentRun
from ..errors import RecordError
from ..results.fingerprints import fingerprints_of
from ..results.journal import Journal
from ..results.lock import OutLock, held_here
from ..results.record import RUNS_FILE, Record, RunKey, make_header, read_record
from ..results.resume import carry_generated, check_out_folder, check_resumable
from ..score.metrics.base import Metric
from .notices import ResumeWarning, metric_changes, reference_changes, warn_user

__all__ = ["open_journal"]


def open_journal(
    dataset: EvalDataset,
    agent_names: Sequence[str],
    metrics: Sequence[Metric],
    config: RunConfig,
    *,
    kind: str,
    settings: Mapping[str, Any] | None = None,
    tools: Mapping[str, Any] | None = None,
    a2a_preflight: Mapping[str, Any] | None = None,
) -> tuple[Journal | None, dict[RunKey, AgentRun]]:
    """The journal for ``config.out`` (None without one) and the runs it already holds when resuming.

    A record already in ``out`` is an error unless ``resume`` (continue it) or ``overwrite``
    (replace it): a finished run is never thrown away by accident.
    """
    out = config.out_dir
    if out is None:
        return None, {}
    # One writer per folder: taken before the journal is read, so two resumes cannot both run what
    # it lacks. The entry points hold it until the results are saved; else the journal holds it.
    lock = None if held_here(out) or (out.exists() and not out.is_dir()) else OutLock.acquire(out)
    try:
        journal, done = _open_journal(out, dataset, agent_names, metrics, config, kind=kind, settings=settings,
                                      tools=tools, a2a_preflight=a2a_preflight)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    journal.lock = lock
    return journal, done


def _open_journal(
    out: Path,
    dataset: EvalDataset,
    agent_names: Sequence[str],
    metrics: Sequence[Metric],
    config: RunConfig,
    *,
    kind: str,
    settings: Mapping[str, Any] | None,
    tools: Mapping[str, Any] | None = None,
    a2a_preflight: Mapping[str, Any] | None = None,
) -> tuple[Journal, dict[RunKey, AgentRun]]:
    path = out / RUNS_FILE
    fingerprints = fingerprints_of(dataset)
    check_out_folder(out, overwrite=config.overwrite)
    if path.exists() and path.stat().st_size > 0:
        if config.resume:
            record = read_record(path)
            check_resumable(record, fingerprints=fingerprints, agents=agent_names, trials=config.trials, tools=tools)
            changed = _say_what_changed(record, dataset, metrics)
            carry_generated(record.cases, dataset)  # e.g. generated rubrics: the saved runs are re-scored on them
            done = {key: run for key, (run, _) in record.runs.items() if key[2] < config.trials}
            journal = Journal.reopen(record)
            journal.scores_current = not changed and all(scores is not None for _, scores in record.runs.values())
            return journal, done
        if not config.overwrite:
            raise RecordError(
                f"{out} already holds a run record ({path.name}); resume it with resume=True (--resume), "
                "replace it with overwrite=True (--overwrite), or choose another out folder"
            )
    header = make_header(
        source=dataset.source,
        fingerprints=fingerprints,
        agents=agent_names,
        metrics=metrics,
        options=config.to_dict(),
        kind=kind,
        settings=settings,
        tools=tools,
        a2a_preflight=a2a_preflight,
    )
    return Journal.create(path, header, list(dataset), fingerprints), {}


def _say_what_changed(record: Record, dataset: EvalDataset, metrics: Sequence[Metric]) -> bool:
    """Warn about what a resumed journal was run with that differs now: references (the saved runs
    are kept and scored against the new ones) and metrics (every run is scored with the new list).
    Whether anything did (the saved runs' scores are then out of date)."""
    changed = reference_changes(record.cases, list(dataset))
    if changed:
        shown = "; ".join(f"{case_id!r} ({', '.join(fields)})" for case_id, fields in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        warn_user(ResumeWarning(
            f"resuming {record.path}: the references of {len(changed)} case(s) changed since their runs were "
            f"journaled: {shown}{more}. Their saved runs are kept, not run again, and scored against the new "
            "references (run again with overwrite=True / --overwrite to re-run them)"
        ))
    added, removed, renewed = metric_changes(record.header.get("metrics") or [], metrics)
    if added or removed or renewed:
        parts = [f"{label} {', '.join(map(repr, names))}" for label, names in
                 (("added", added), ("removed", removed), ("with other arguments", renewed)) if names]
        warn_user(ResumeWarning(
            f"resuming {record.path}: the metrics differ from the journal's ({'; '.join(parts)}); every run, "
            "saved or new, is scored with the metrics given now, and the record will list them"
        ))
    return bool(changed or added or removed or renewed)
