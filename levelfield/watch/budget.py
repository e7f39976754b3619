"""The judges' spending limit per clock hour (``--max-cost``): what judged metrics may spend each hour.

Each hour (UTC, on the clock of the scoring) starts a new :class:`~levelfield._core.data.cost_limit.CostLimit`
of ``usd_per_hour``, asked before each judged score as ``judge_max_cost_usd`` is in ``compare``.
Once the hour's budget is spent, the traces scored in the rest of that hour still get every
unjudged metric, and each judged metric they would have had is recorded as skipped for the
budget: NaN with ``<metric>/skipped_for_budget`` set, neither a judge failure nor a zero, left out
of the means like any score that could not be computed. What the hour spent is kept in
``out/state/judge_budget.json``, so a restart within the hour does not spend it twice.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._core.data.cost_limit import CostLimit
from .._core.data.prices import PriceTable
from .._core.errors import ConfigError
from .._core.results.writing import write_text
from .._core.score.metrics.base import NAN, Score

__all__ = ["HourlyBudget", "SKIPPED_FOR_BUDGET", "skipped_for_budget"]

log = logging.getLogger("levelfield.watch")

SKIPPED_FOR_BUDGET = "skipped_for_budget"
"""The ``Score.extra`` key (column ``<metric>/skipped_for_budget``) of a judged score skipped for the hour's budget."""
HOUR = 3600.0


def skipped_for_budget(score: Score) -> bool:
    """Whether ``score`` is a judged score skipped because the hour's budget was spent."""
    return bool(score.extra.get(SKIPPED_FOR_BUDGET))


class HourlyBudget:
    """``usd_per_hour`` for the judges each clock hour; used from the scoring thread only."""

    def __init__(self, usd_per_hour: float, prices: PriceTable, state_path: Path) -> None:
        if isinstance(usd_per_hour, bool) or not isinstance(usd_per_hour, (int, float)) or not (
                math.isfinite(usd_per_hour) and usd_per_hour >= 0):
            raise ConfigError(f"max_cost={usd_per_hour!r}: give the dollars judged metrics may spend per hour (0 or more)")
        self.usd_per_hour = float(usd_per_hour)
        self.prices = prices
        self.state_path = state_path
        self.hour: float | None = None
        self.limit: CostLimit | None = None
        self._warned: set[str] = set()
        self.clock: Callable[[], float] = time.time
        """Where the hour is read from (seconds since the epoch)."""

    def current(self) -> CostLimit:
        """The budget of the hour it is now (a new one when the hour turned)."""
        hour = math.floor(self.clock() / HOUR) * HOUR
        if self.limit is None or hour != self.hour:
            self.hour, self.limit = hour, CostLimit(self.usd_per_hour, self.prices, shared=False)
            for kind, (usd, calls) in self._saved(hour).items():
                self.limit.spent_before(kind, usd, calls)
        return self.limit

    def refused(self) -> Score:
        """The score of a judged metric the hour's budget refused."""
        return Score(NAN, explanation=f"not judged: the judges' budget of ${self.usd_per_hour:g} for this hour was spent "
                                      "(--max-cost); judging resumes next hour", extra={SKIPPED_FOR_BUDGET: True})

    @property
    def spent(self) -> float:
        """Dollars the judges spent this hour."""
        return self.limit.spent if self.limit is not None else 0.0

    def save(self) -> None:
        """Keep what the hour spent (after each batch), and warn once per metric whose cost is unknown."""
        if self.limit is None:
            return
        for kind, why in self.limit.unpriced.items():
            if kind not in self._warned:
                self._warned.add(kind)
                log.warning("levelfield watch: --max-cost cannot count metric %r's judge calls (%s); they are not limited",
                            kind, why)
        totals = {k: [usd, n] for k, (usd, n) in self.limit.spent_by_kind().items()}
        write_text(self.state_path, json.dumps({"hour": self.hour, "spent": totals}))

    def _saved(self, hour: float) -> dict[str, tuple[float, int]]:
        try:
            state: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if state.get("hour") != hour:
            return {}
        return {str(k): (float(v[0]), int(v[1])) for k, v in (state.get("spent") or {}).items()}
