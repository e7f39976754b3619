"""Whether a run may write into an out folder: a folder checked before a new record, a journal before it is resumed.

Also what a resumed run takes back from its journal (case metadata that scoring generated).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.dataset import EvalCase
from ..errors import RecordError
from .lock import LOCK_FILE
from .record import RUNS_FILE, Record

__all__ = ["GENERATED_CASE_FIELDS", "carry_generated", "check_out_folder", "check_resumable", "levelling_changes"]


def check_out_folder(out: Path, *, overwrite: bool, kept: Collection[str] = ()) -> None:
    """Refuse an ``out`` that is a file, or a folder holding files but no run record, unless
    ``overwrite``: results written there would replace files of the same name, and a file named like
    one of levelfield's outputs (a user's own ``metrics_table.csv``) is no less the user's for it.
    Hidden files (``.gitkeep``, ``.DS_Store``) do not count; nor do ``kept``, files the caller knows
    as its own results and was told to replace (saved predictions' score table on ``resume``). A
    record already there is the caller's to refuse, resume or replace."""
    if out.exists() and not out.is_dir():
        raise RecordError(f"out={str(out)!r} is a file, not a folder: give a folder for the run record and results")
    if overwrite or not out.is_dir() or (out / RUNS_FILE).exists():
        return
    # The journal's lock (runs.jsonl.lock) is this run's own, or one a crashed run left.
    held = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir()
                  if not p.name.startswith(".") and p.name not in kept and p.name != LOCK_FILE)
    if held:
        raise RecordError(
            f"{out} holds {len(held)} other file(s) ({_few(held)}) and no run record ({RUNS_FILE}); results written "
            "there would replace files of the same name. Choose a new or empty folder, or pass overwrite=True "
            "(--overwrite) to write into it anyway"
        )


GENERATED_CASE_FIELDS = ("rubric_groups",)
"""Case metadata that scoring may add (Vertex's ``rubric_groups``: rubrics a judge generated for a case).
The record's case lines keep it, and a resumed run takes it back, so a re-score never generates it anew."""


def carry_generated(saved: Iterable[EvalCase], cases: Iterable[EvalCase]) -> None:
    """Copy what scoring generated for ``saved`` cases (a record's) onto the same cases of ``cases``, where they lack it.

    Per group: a rubric group the dataset gives itself wins over the saved one of the same name.
    """
    by_id = {c.case_id: c for c in saved}
    for case in cases:
        old = by_id.get(case.case_id)
        if old is None:
            continue
        for key in GENERATED_CASE_FIELDS:
            kept = old.metadata.get(key)
            if isinstance(kept, Mapping) and kept:
                mine = case.metadata.get(key)
                if mine is None:
                    case.metadata[key] = dict(kept)
                elif isinstance(mine, dict):
                    for name, value in kept.items():
                        mine.setdefault(name, value)


def levelling_changes(saved: Mapping[str, Any] | None, given: Mapping[str, Any] | None) -> list[str]:
    """What differs between the tool levelling a record ran with and the one given now (a cassette
    by path, mode and, replayed both times, fingerprint; a fault schedule by every setting and its
    version; an environment by its description, package version included), each named; [] when they agree."""
    saved, given = saved or {}, given or {}
    problems = []
    old, new = saved.get("cassette"), given.get("cassette")
    if old != new:
        if old is None or new is None:
            problems.append(f"the journal ran {'with cassette ' + repr(old['path']) if old else 'without a cassette'}, "
                            f"and now {'cassette ' + repr(new['path']) + ' is given' if new else 'none is given'}")
        elif old.get("path") != new.get("path"):
            problems.append(f"the journal ran with cassette {old.get('path')!r}, not {new.get('path')!r}")
        elif old.get("mode") == new.get("mode") == "replay" and old.get("fingerprint") != new.get("fingerprint"):
            problems.append(f"cassette {new.get('path')!r} changed since the journal's runs replayed it (fingerprint "
                            f"{old.get('fingerprint')} then, {new.get('fingerprint')} now)")
    old, new = saved.get("faults"), given.get("faults")
    if old != new:
        if old is None or new is None:
            problems.append(f"the journal ran {'with faults ' + repr(old) if old else 'without faults'}, and now "
                            f"{'faults ' + repr(new) + ' are given' if new else 'none are given'}")
        else:
            fields = [f"{k}={old.get(k)!r} then, {new.get(k)!r} now" for k in sorted(set(old) | set(new))
                      if old.get(k) != new.get(k)]
            problems.append(f"the fault schedule differs ({'; '.join(fields)})")
    old, new = saved.get("environment"), given.get("environment")
    if old != new:
        # an environment's package version is its data's: runs in another world do not resume these
        problems.append(f"the journal ran {'in environment ' + repr(old) if old else 'without an environment'}, and "
                        f"now {'environment ' + repr(new) + ' is given' if new else 'none is given'}")
    return problems


def check_resumable(record: Record, *, fingerprints: Mapping[str, str], agents: Sequence[str], trials: int,
                    tools: Mapping[str, Any] | None = None) -> None:
    """Raise a RecordError naming what differs when ``record`` cannot be resumed with these inputs."""
    where = f"the journal {record.path}"
    planned = (record.header.get("dataset") or {}).get("cases")
    if isinstance(planned, int) and len(record.cases) < planned and not record.runs:
        # Runs are appended after every case line: the journal was cut off as it was created.
        raise RecordError(
            f"cannot resume {where}: it was cut off while it was being created ({len(record.cases)} of its {planned} "
            "case lines were written: the disk was full or the process was killed); no run was recorded. "
            "Start again with overwrite=True (--overwrite)"
        )
    problems = []
    # A baseline joined the saved comparison from an earlier folder: its runs were loaded, not run here.
    baseline = (record.header.get("settings") or {}).get("baseline")
    saved_agents, new_agents = [a for a in record.agents if a != baseline], list(agents)
    if sorted(saved_agents) != sorted(new_agents):
        gone = [a for a in saved_agents if a not in new_agents]
        new = [a for a in new_agents if a not in saved_agents]
        parts = []
        if gone:
            parts.append(f"{', '.join(map(repr, gone))} not given now")
        if new:
            parts.append(f"{', '.join(map(repr, new))} not in the journal")
        problems.append(f"agents differ ({'; '.join(parts)})")
    saved = record.fingerprints
    only_saved = [c for c in saved if c not in fingerprints]
    only_new = [c for c in fingerprints if c not in saved]
    changed = [c for c in saved if c in fingerprints and saved[c] != fingerprints[c]]
    if only_saved or only_new or changed:
        parts = []
        if only_saved:
            parts.append(f"{len(only_saved)} case(s) not in this dataset ({_few(only_saved)})")
        if only_new:
            parts.append(f"{len(only_new)} case(s) not in the journal ({_few(only_new)})")
        if changed:
            parts.append(f"{len(changed)} case(s) with another prompt, history or state ({_few(changed)})")
        problems.append(f"the dataset differs: {'; '.join(parts)}")
    if trials < record.trials:
        problems.append(f"trials={trials} but the journal ran {record.trials}; resume with trials>={record.trials}")
    problems += [f"tools: {p}" for p in levelling_changes(record.header.get("tools"), tools)]
    if problems:
        raise RecordError(
            f"cannot resume {where}: " + "; ".join(problems)
            + ". Resume with the same dataset, agents, cassette and faults, or write to another out folder"
        )


def _few(ids: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return shown + (f" and {len(ids) - n} more" if len(ids) > n else "")
