"""The runs under the served folders, kept between requests and found again as new ones land.

Folders are walked again at most once every ``rescan`` seconds (the browser polls; new runs show
up within that); each run's index is refreshed only when its file's size, time or inode changed.
A run is known by an id, the path of its folder below the served folder's parent (``runs/v2``):
pages look runs up by that id in this table, never by opening a path a URL names, so no URL can
reach a file outside the runs found.

The report's statistics (verdict, intervals, pairwise tests) need the whole
:class:`~levelfield.Comparison`; it is loaded for a run of at most ``REPORT_RUNS`` runs
and kept while the file is unchanged. Beyond that a run page shows the means from the index, and
``levelfield report DIR`` writes the full report.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.errors import LevelfieldError
from .._core.stats.change import Change
from ..comparison._comparability import EvaluatorsDifferError
from ..gate import scores_changes
from .diff import Side, diff_runs, pair_agents
from .index import RunIndex, find_runs

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["Catalog", "REPORT_RUNS", "Baseline"]

REPORT_RUNS = 20_000
"""Runs (agents × cases × trials) up to which a run page computes the full report."""

_KEPT_COMPARISONS = 4


@dataclass(frozen=True)
class Baseline:
    """A run's standing against a baseline: ``pass``, ``regressed`` (with the changes that regressed) or ``n/a``."""

    verdict: str
    against: str
    regressions: tuple[Change, ...] = ()
    note: str = ""


class Catalog:
    """Every run under ``roots``, by id."""

    def __init__(self, roots: Sequence[str | Path], *, rescan: float = 1.0) -> None:
        self.roots = [Path(r) for r in roots]
        self.rescan = rescan
        self._runs: dict[str, RunIndex] = {}
        self._scanned = -float("inf")
        self._lock = threading.RLock()
        self._comparisons: OrderedDict[str, tuple[tuple[int, int, int], Comparison | None, str]] = OrderedDict()

    # -- finding ---------------------------------------------------------------------------

    def runs(self) -> dict[str, RunIndex]:
        """Every run found, id -> index, each brought up to date."""
        with self._lock:
            if time.monotonic() - self._scanned >= self.rescan:
                self._scan()
            for index in self._runs.values():
                index.refresh()
            return dict(self._runs)

    def get(self, run_id: str) -> RunIndex | None:
        """The run called ``run_id``, up to date; None when there is none."""
        with self._lock:
            index = self._runs.get(run_id)
            if index is None and time.monotonic() - self._scanned >= self.rescan:
                self._scan()
                index = self._runs.get(run_id)
            if index is not None:
                index.refresh()
            return index

    def _scan(self) -> None:
        found: dict[str, RunIndex] = {}
        for root, path, kind in find_runs(self.roots):
            run_id = _run_id(root, path)
            while run_id in found and found[run_id].path != path:
                run_id += "~"
            known = self._runs.get(run_id)
            found[run_id] = known if known is not None and known.path == path and type(known) is kind else kind(path)
        self._runs = found
        self._scanned = time.monotonic()

    def version(self, run_id: str | None = None) -> str:
        """A token that changes when the runs (or the one run ``run_id``) change: the browser polls it."""
        runs = self.runs()
        chosen = [(k, v) for k, v in sorted(runs.items()) if run_id is None or k == run_id]
        text = "|".join(f"{k}:{v.stamp}" for k, v in chosen)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    # -- the report's statistics -------------------------------------------------------------

    def comparison(self, run_id: str) -> tuple[Comparison | None, str]:
        """The run as a Comparison for the report's sections, or None and why not (too large, a table, unreadable)."""
        index = self.get(run_id)
        if index is None:
            return None, "no such run"
        if index.kind == "saved predictions":
            return None, "a score table of saved predictions holds no runs to compute the report from"
        size = len(index.runs)
        if size > REPORT_RUNS:
            return None, (f"{size:,} runs: the page shows the means; the intervals, tests and verdict are in the full "
                          f"report (levelfield report {index.path.parent})")
        with self._lock:
            kept = self._comparisons.get(run_id)
            if kept is not None and kept[0] == index.stamp:
                self._comparisons.move_to_end(run_id)
                return kept[1], kept[2]
            from ..comparison._comparison import Comparison

            try:
                cmp, why = Comparison.load(index.path), ""
            except LevelfieldError as exc:
                cmp, why = None, str(exc)
            self._comparisons[run_id] = (index.stamp, cmp, why)
            while len(self._comparisons) > _KEPT_COMPARISONS:
                self._comparisons.popitem(last=False)
            return cmp, why

    # -- standing against a baseline ------------------------------------------------------------

    def baseline(self, run_id: str, against: str | None = None) -> Baseline:
        """``run_id`` against the run ``against`` (B against A in a diff), or against the baseline agent
        it was compared with (``compare(..., baseline=...)``) when no run is given."""
        index = self.get(run_id)
        if index is None:
            return Baseline("n/a", "", note="no such run")
        if against:
            other = self.get(against)
            if other is None or against == run_id:
                return Baseline("n/a", against)
            pair = pair_agents(other, index)
            if pair is None:
                return Baseline("n/a", against, note="no agent to compare")
            try:
                diff = diff_runs(Side(against, other, pair[0]), Side(run_id, index, pair[1]), warn=False)
            except EvaluatorsDifferError as exc:
                return Baseline("n/a", against, note=str(exc))
            if not diff.cases or not diff.metrics:
                return Baseline("n/a", against, note="no case or metric in common")
            return _standing(diff.changes, against)
        base = index.settings.get("baseline")
        if not base or base not in index.agents:
            return Baseline("n/a", "")
        changes: list[Change] = []
        for agent in index.agents:
            if agent != base:
                new = {m: index.case_scores(m, agent) for m in index.metrics}
                old = {m: index.case_scores(m, base) for m in index.metrics}
                changes += scores_changes(new, old, agent=agent, baseline=base, stats=index.stats)
        return _standing(changes, str(base))


def _standing(changes: list[Change], against: str) -> Baseline:
    tested = [c for c in changes if c.verdict != "not testable"]
    if not tested:
        return Baseline("n/a", against, note="nothing testable")
    regressions = tuple(c for c in tested if c.regression)
    return Baseline("regressed" if regressions else "pass", against, regressions)


def _run_id(root: Path, path: Path) -> str:
    folder = path.parent
    base = root.resolve().parent if root.is_dir() else root.resolve().parent.parent
    try:
        return folder.resolve().relative_to(base).as_posix() or folder.resolve().name
    except ValueError:
        return folder.resolve().name
