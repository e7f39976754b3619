"""What one endpoint's limit did during an evaluation: the figures the result, the report and the CLI print."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LimitStats"]


@dataclass(frozen=True)
class LimitStats:
    """What one endpoint's limit did during an evaluation."""

    endpoint: str
    """What the calls went to: ``agent <name>``, ``a2a http://host:port``, ``judge <model>``, ``simulator <model>``."""
    ceiling: int
    """The most calls in flight allowed (``concurrency``)."""
    limit: int
    """The limit at the end (the ceiling when the endpoint never refused a call, or without ``adaptive``)."""
    mean_in_flight: float
    """Calls in flight on average while the endpoint was in use: the concurrency it effectively ran at."""
    peak_in_flight: int
    """The most calls in flight at once."""
    calls: int
    """Calls started (refused ones included)."""
    rate_limited: int
    """Calls the endpoint refused for its rate limit (HTTP 429/503, a provider's RateLimitError)."""
    waited_seconds: float
    """Seconds calls spent waiting on limits, all calls together (for a free slot, a token, a Retry-After)."""
    adaptive: bool = True
    """Whether the limit followed the endpoint's rate limits."""
    per_request: int = 0
    """Of those, first refusals whose immediate retry the endpoint admitted with as many calls in flight:
    per-request refusals, not capacity."""
    start: int = 0
    """The calls in flight the limit started at: half the ceiling on first contact, the limit an earlier run
    learned for this endpoint (``learned``; kept in levelfield's cache folder, see ``levelfield limits``), or the
    calls an earlier run held in flight with none refused (the ceiling, when it was as high)."""
    learned: bool = False
    """Whether the limit started at what an earlier run learned of this endpoint."""

    @property
    def met(self) -> bool:
        """Whether a limit held calls back: the endpoint refused some, or calls waited 0.05 s each on
        average (a token bucket, a Retry-After, a window cut). A window still opening by slow start, below
        the ceiling at the end of a short run, is not a limit met."""
        return bool(self.rate_limited) or (self.calls > 0 and self.waited_seconds / self.calls >= 0.05)

    def describe(self) -> str:
        """One line for people: ``...: ran at about 7.9 in flight (adaptive limit 8 of 64, peak 9); 400 call(s),
        3 rate-limited, 0.35 s waiting on limits per call``."""
        level = f"ran at about {self.mean_in_flight:.1f} in flight"
        if self.adaptive:
            bound = f"adaptive limit {self.limit} of {self.ceiling}"
            if self.learned:
                bound += f", started at {self.start} learned in an earlier run"
        else:
            bound = f"fixed limit {self.ceiling}"
        per_call = self.waited_seconds / self.calls if self.calls else 0.0
        return (f"{self.endpoint}: {level} ({bound}, peak {self.peak_in_flight}); {self.calls} call(s), "
                f"{self.rate_limited} rate-limited, {per_call:.2f} s waiting on limits per call")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}
