"""The endpoint limits of one evaluation: one :class:`~levelfield._core.run.limits.EndpointLimit` per endpoint
its agents, judge and simulated user call, and the evaluation's limits current in a task's context."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from . import learned
from .limit_stats import LimitStats
from .limits import EndpointLimit

__all__ = ["Limits", "current", "endpoint_of", "reset_current", "set_current", "using"]


def endpoint_of(agent: Any) -> str:
    """The endpoint an agent's calls go to: its ``endpoint`` (an A2A agent's host), else its name."""
    endpoint = getattr(agent, "endpoint", None)
    return endpoint if isinstance(endpoint, str) and endpoint else f"agent {agent.name}"


def _per(setting: int | float | Mapping[str, Any] | None, *names: str) -> float | None:
    """A per-endpoint setting: one number for every agent, or the value under one of ``names``."""
    if setting is None:
        return None
    if isinstance(setting, Mapping):
        for name in names:
            if name in setting:
                return setting[name]
        return None
    return setting


class Limits:
    """The endpoint limits of one evaluation, by endpoint; built from its RunConfig's options.

    ``requests_per_minute`` and ``tokens_per_minute`` are one number (every agent) or a mapping by
    agent name, where ``"judge"`` and ``"simulator"`` name the judge and the simulated user.
    """

    def __init__(
        self,
        *,
        adaptive: bool = True,
        concurrency: int = 8,
        agent_concurrency: Mapping[str, int] | None = None,
        requests_per_minute: int | float | Mapping[str, Any] | None = None,
        tokens_per_minute: int | float | Mapping[str, Any] | None = None,
    ) -> None:
        self.adaptive = adaptive
        self.concurrency = concurrency
        self.agent_concurrency = dict(agent_concurrency or {})
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._limits: dict[str, EndpointLimit] = {}
        self._agents: dict[str, EndpointLimit | None] = {}  # by agent name: the limit of its endpoint
        self._learned: dict[str, dict[str, Any]] | None = None  # read from the cache folder when first needed

    def _kept(self, adaptive: bool) -> dict[str, dict[str, Any]] | None:
        """What earlier runs kept of each endpoint (``levelfield._core.run.learned``), read once; None when not adaptive."""
        if not adaptive:
            return None
        if self._learned is None:
            self._learned = learned.learned()
        return self._learned

    def _recall(self, endpoint: str, adaptive: bool) -> int | None:
        """The limit an earlier run learned for ``endpoint`` (see ``levelfield._core.run.learned``)."""
        kept = self._kept(adaptive)
        return None if kept is None else learned.recall(endpoint, kept)

    def _carried(self, endpoint: str, adaptive: bool) -> int | None:
        """The calls in flight ``endpoint`` carried in an earlier run without a refusal (see ``learned``)."""
        kept = self._kept(adaptive)
        return None if kept is None else learned.carried(endpoint, kept)

    @classmethod
    def of(cls, config: Any) -> Limits:
        """The limits a ``RunConfig`` asks for."""
        return cls(
            adaptive=config.adaptive,
            concurrency=config.concurrency,
            agent_concurrency=config.agent_concurrency,
            requests_per_minute=config.requests_per_minute,
            tokens_per_minute=config.tokens_per_minute,
        )

    def _limited(self, *names: str) -> bool:
        return self.adaptive or _per(self.requests_per_minute, *names) is not None or (
            _per(self.tokens_per_minute, *names) is not None
        )

    def for_agent(self, agent: Any) -> EndpointLimit | None:
        """The limit of the endpoint ``agent`` calls; None when nothing limits it (no adaptive, no rates)."""
        name = agent.name
        if name in self._agents:
            return self._agents[name]
        if not self._limited(name):
            self._agents[name] = None
            return None
        endpoint = endpoint_of(agent)
        limit = self._limits.get(endpoint)
        if limit is None:
            ceiling = min(self.concurrency, self.agent_concurrency.get(name, self.concurrency))
            limit = self._limits[endpoint] = EndpointLimit(
                endpoint, ceiling, adaptive=self.adaptive,
                requests_per_minute=_per(self.requests_per_minute, name),
                tokens_per_minute=_per(self.tokens_per_minute, name),
                learned=self._recall(endpoint, self.adaptive), carried=self._carried(endpoint, self.adaptive),
            )
        self._agents[name] = limit
        return limit

    def for_service(self, role: str, endpoint: str, ceiling: int, *, adaptive: bool | None = None,
                    requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> EndpointLimit:
        """The limit of a model levelfield itself calls: ``role`` is ``"judge"`` or ``"simulator"``;
        rates given here win over this evaluation's mapping entry for the role."""
        limit = self._limits.get(endpoint)
        if limit is None:
            # A plain number in RunConfig is for the agents; a mapping may name the role.
            rpm = requests_per_minute or (_per(self.requests_per_minute, role) if isinstance(self.requests_per_minute, Mapping) else None)
            tpm = tokens_per_minute or (_per(self.tokens_per_minute, role) if isinstance(self.tokens_per_minute, Mapping) else None)
            adaptive = self.adaptive if adaptive is None else adaptive
            limit = self._limits[endpoint] = EndpointLimit(
                endpoint, ceiling, adaptive=adaptive, requests_per_minute=rpm, tokens_per_minute=tpm,
                learned=self._recall(endpoint, adaptive), carried=self._carried(endpoint, adaptive),
            )
        return limit

    def stats(self) -> list[LimitStats]:
        """Every endpoint's statistics, in the order they were first called."""
        return [limit.stats() for limit in self._limits.values() if limit.calls]

    def remember(self) -> None:
        """Keep what the endpoints' limits learned for the next run (levelfield's cache folder)."""
        learned.remember(self._limits.values())

    def summary(self) -> str:
        """``8/64 56x429 0.70s waiting/call``: the busiest endpoint in flight of its limit, for a progress bar."""
        used = [limit for limit in self._limits.values() if limit.calls]
        if not used:
            return ""
        busiest = max(used, key=lambda limit: limit.calls)
        text = f"{busiest.in_flight}/{busiest.limit}"
        if busiest.learned is not None:
            text += f" (learned {busiest.learned})"
        if busiest.rate_limited:
            text += f" {busiest.rate_limited}x429"
        # Per call, as the closing summary says it: a sum over calls in flight together outgrows the wall clock.
        calls = sum(limit.calls for limit in used)
        waited = sum(limit.waited for limit in used) / calls
        if waited >= 0.005:
            text += f" {waited:.2f}s waiting/call"
        return text


_current: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("levelfield_limits", default=None)


def current() -> Limits | None:
    """The limits of the evaluation running in this context, or None outside one."""
    return _current.get()


def set_current(limits: Limits) -> contextvars.Token[Limits | None]:
    """Make ``limits`` the current evaluation's in this context; undo with ``reset_current(token)``."""
    return _current.set(limits)


def reset_current(token: contextvars.Token[Limits | None]) -> None:
    """Restore the limits ``set_current`` replaced."""
    _current.reset(token)


@contextlib.contextmanager
def using(limits: Limits) -> Iterator[Limits]:
    """Make ``limits`` the current evaluation's in this block (the engine, a Ray worker)."""
    token = set_current(limits)
    try:
        yield limits
    finally:
        reset_current(token)
