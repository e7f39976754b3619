"""A token bucket for ``requests_per_minute`` and ``tokens_per_minute``: the endpoint's rate, billed after the call."""

from __future__ import annotations

import time

__all__ = ["TokenBucket"]


class TokenBucket:
    """``per_minute`` tokens a minute, up to one second's worth at once; a debt holds takers until repaid.

    Written here rather than taken from a rate-limiter package: the tokens a call spends are known
    only after it ends, so the bucket must let a call start and bill it afterwards (a debt), which
    the leaky-bucket limiters available (aiolimiter, LangChain's InMemoryRateLimiter) do not.
    """

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.tokens = self.capacity
        self._at = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def delay(self, need: float) -> float:
        """Seconds until ``need`` tokens are there (0: now)."""
        self._refill()
        if self.tokens >= need:
            return 0.0
        return (need - self.tokens) / self.rate

    def take(self, amount: float) -> None:
        """Spend ``amount`` tokens (the balance may go below zero: a debt later calls wait out)."""
        self._refill()
        self.tokens -= amount
