"""Seeded tool faults: the same faults on the same calls, for every agent and every rerun.

Whether a call meets a fault, and which, is a pure function of (schedule version, seed, case,
trial, tool, call index): the index counts the run's calls of that tool (0 for the first). So two
agents that make the same calls meet the same faults, whatever their framework or timing, and a
rerun with the same seed meets them again. Faults apply on top of live or replayed answers.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

from .._core.errors import ConfigError, ConfigTypeError, LevelfieldWarning

__all__ = ["Faults", "FaultsWarning", "FAULT_KINDS", "SCHEDULE_VERSION", "InjectedToolError", "InjectedToolTimeout",
           "InjectedToolRefusal"]

FAULT_KINDS = ("error", "timeout", "empty", "malformed", "rate_limit", "slow")
SCHEDULE_VERSION = 1
"""Bumped whenever the schedule's function changes: a run record names the version it met."""


class FaultsWarning(LevelfieldWarning):
    """``Faults`` that can hit no call: ``tools=[]``, or tool names no agent of the evaluation has."""


class InjectedToolError(RuntimeError):
    """An ``error`` fault: the tool failed (injected by ``lf.Faults``)."""


class InjectedToolTimeout(TimeoutError):
    """A ``timeout`` fault: the tool did not answer in time (injected by ``lf.Faults``)."""


class InjectedToolRefusal(RuntimeError):
    """A ``rate_limit`` fault: the tool refused the call, too many calls (injected by ``lf.Faults``).

    Deliberately not an HTTP 429 to levelfield's own runner: the agent is meant to meet it, not the
    runner to wait it out."""


class Faults:
    """A seeded fault schedule for ``evaluate``/``compare(faults=...)``.

    Args:
        rate: the share of calls that meet a fault, in [0, 1].
        kinds: the kinds drawn from, each equally likely: ``error`` (the tool raises), ``timeout``
            (raises ``TimeoutError``), ``empty`` (an empty answer of the output's type), ``malformed``
            (the answer's JSON text cut in half), ``rate_limit`` (raises, "too many calls"), ``slow``
            (the answer comes ``slow_seconds`` late).
        seed: the schedule's seed.
        tools: the tool names faults may hit (None: every tool).
        slow_seconds: the delay of a ``slow`` fault.
    """

    def __init__(self, rate: float = 0.1, kinds: Sequence[str] = FAULT_KINDS, seed: int = 0,
                 tools: Sequence[str] | None = None, *, slow_seconds: float = 0.5) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ConfigError(f"Faults(rate={rate!r}): the share of calls that meet a fault, a number in [0, 1]")
        if isinstance(kinds, str):
            kinds = [kinds]
        kinds = list(kinds)
        unknown = [k for k in kinds if k not in FAULT_KINDS]
        if unknown or not kinds:
            what = "unknown " + ", ".join(map(repr, unknown)) if unknown else "none given"
            raise ConfigError(f"Faults(kinds={kinds!r}): {what}; "
                              f"the kinds are {', '.join(FAULT_KINDS)}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigTypeError(f"Faults(seed={seed!r}): an integer")
        if tools is not None and (isinstance(tools, str) or not all(isinstance(t, str) for t in tools)):
            raise ConfigTypeError(f"Faults(tools={tools!r}): a list of tool names, or None for every tool")
        if isinstance(slow_seconds, bool) or not isinstance(slow_seconds, (int, float)) \
                or not 0 <= slow_seconds < math.inf:
            raise ConfigError(f"Faults(slow_seconds={slow_seconds!r}): the delay of a 'slow' fault, a number of "
                              "seconds of 0 or more (e.g. slow_seconds=0.5)")
        if tools is not None and not list(tools) and rate > 0:
            from .._core.run.notices import warn_user  # not at import: the levelling names load light

            warn_user(FaultsWarning("Faults(tools=[]) names no tool, so no call meets a fault; give the tool names "
                                    "faults may hit, or tools=None for every tool"))
        self.rate = float(rate)
        self.kinds = tuple(dict.fromkeys(kinds))
        self.seed = seed
        self.tools = None if tools is None else tuple(tools)
        self.slow_seconds = float(slow_seconds)

    def fault_for(self, case_id: str, trial: int, tool: str, index: int) -> str | None:
        """The fault the ``index``-th call of ``tool`` in this case and trial meets, or None."""
        if self.tools is not None and tool not in self.tools:
            return None
        if self.rate <= 0:
            return None
        text = json.dumps([SCHEDULE_VERSION, self.seed, case_id, trial, tool, index], separators=(",", ":"))
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        if draw >= self.rate:
            return None
        return self.kinds[int.from_bytes(digest[8:16], "big") % len(self.kinds)]

    def describe(self) -> dict[str, Any]:
        """What the run record keeps: everything the schedule depends on, and its version."""
        return {"rate": self.rate, "kinds": list(self.kinds), "seed": self.seed,
                "tools": None if self.tools is None else list(self.tools), "slow_seconds": self.slow_seconds,
                "schedule_version": SCHEDULE_VERSION}

    def __repr__(self) -> str:
        return f"Faults(rate={self.rate:g}, kinds={self.kinds!r}, seed={self.seed}, tools={self.tools!r})"


def raise_fault(kind: str, tool: str) -> None:
    """Raise what a raising fault of ``kind`` raises (nothing for the others)."""
    if kind == "error":
        raise InjectedToolError(f"tool {tool!r} failed (injected fault 'error')")
    if kind == "timeout":
        raise InjectedToolTimeout(f"tool {tool!r} timed out (injected fault 'timeout')")
    if kind == "rate_limit":
        raise InjectedToolRefusal(f"tool {tool!r} refused the call: too many calls, try again later "
                                    "(injected fault 'rate_limit')")


def faulted_output(kind: str, output: Any) -> Any:
    """The answer an ``empty`` or ``malformed`` fault gives in place of ``output``."""
    if kind == "empty":
        if isinstance(output, dict):
            return {}
        if isinstance(output, list):
            return []
        return ""
    if kind == "malformed":
        text = output if isinstance(output, str) else json.dumps(output, default=str, ensure_ascii=False)
        if not text:
            return "{"
        return text[: max(1, len(text) // 2)]
    return output
