"""The passive A2A preflight: what an evaluation's own traffic showed about the protocol.

An evaluation sends an A2A agent its cases and nothing else (a probe message is a task the agent
runs: one that books, pays or writes would do it again). So the checks the probes made are made on
the real answers as they arrive: the parts (how tool calls are exposed, parts without content),
the task states (a final state reached or not), the errors (whose fault: protocol rules broken)
and the 429/503 answers (with a usable ``Retry-After`` or without). :meth:`Traffic.checks` turns
what was seen into rows of the same :class:`~levelfield.adapters.a2a.checks.Check` table the
probes fill, each named ``traffic.*`` (or ``retry_after`` / ``tool_calls``, as the probes name them).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .answers import _tool_calls_in
from .checks import S_PARTS, S_RETRY, S_STATES, S_TOOLS, TOOL_CALLS, Check
from .failures import PROTOCOL

__all__: list[str] = []  # private to the A2A adapter: A2AAgent.observed() reads it

NO_TOOLS = ("the card declares no tools (no skill tagged 'tools', as ADK's card builder tags an agent's tools): "
            "no tool calls to expose")


def _busy(exc: BaseException) -> bool:
    """Whether ``exc`` is (or was caused by) an HTTP 429/503 answer."""
    import httpx

    from .http import _chain

    return any(isinstance(e, httpx.HTTPStatusError) and e.response.status_code in (429, 503) for e in _chain(exc))


class Traffic:
    """Counts of what the answers to an agent's runs showed; safe to update from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.answers = 0
        """Answers read to the end (a final or interrupted state, or a message)."""
        self.kinds: set[str] = set()
        """How each answer carried tool calls (keys of ``TOOL_CALLS``: adk, data, none)."""
        self.empty_parts = 0
        self.protocol: Counter[str] = Counter()
        """Rules the answers broke (failed runs the adapter classed as protocol faults), with counts."""
        self.busy = 0
        self.busy_without = 0
        """429/503 answers, and those of them without a usable ``Retry-After``."""

    def answered(self, parts: list[dict[str, Any]], empty_parts: int) -> None:
        with self._lock:
            self.answers += 1
            self.kinds.add(_tool_calls_in(parts))
            self.empty_parts += empty_parts

    def failed(self, failure_class: str | None, rule: str | None) -> None:
        if failure_class == PROTOCOL and rule:
            with self._lock:
                self.protocol[rule] += 1

    def refused(self, retry_after: float | None) -> None:
        with self._lock:
            self.busy += 1
            self.busy_without += retry_after is None

    @property
    def tool_calls(self) -> str:
        """adk, data or none across every answer; unknown before one was read."""
        for kind in ("adk", "data", "none"):
            if kind in self.kinds:
                return kind
        return "unknown"

    def checks(self, declares_tools: bool = True) -> list[Check]:
        """The rows the traffic supports (never a row for what it could not show). ``declares_tools=False``:
        the card declares no tools, so answers without any call are no finding (the ``tool_calls`` row skips)."""
        out: list[Check] = []
        with self._lock:
            if self.protocol:
                said = "; ".join(f"{n} run(s): {rule}" for rule, n in self.protocol.most_common(3))
                out.append(Check("traffic.protocol", "fail", S_STATES, said))
            elif self.answers:
                out.append(Check("traffic.protocol", "pass", S_STATES,
                                 f"{self.answers} answer(s) read to a final state, none broke the spec"))
            if self.empty_parts:
                out.append(Check("traffic.parts", "fail", S_PARTS,
                                 f"{self.empty_parts} part(s) with no content (exactly one of text, file, data)"))
            elif self.answers:
                out.append(Check("traffic.parts", "pass", S_PARTS, "every part had content"))
            if self.busy_without:
                out.append(Check("retry_after", "fail", S_RETRY, f"{self.busy_without} of {self.busy} HTTP 429/503 "
                                 "answer(s) without a usable Retry-After header: a client cannot know when to try again"))
            elif self.busy:
                out.append(Check("retry_after", "pass", S_RETRY, f"{self.busy} busy answer(s), each with Retry-After"))
            kind = self.tool_calls
        if kind == "none" and not declares_tools:
            out.append(Check("tool_calls", "skip", S_TOOLS, NO_TOOLS))
        elif kind != "unknown":
            out.append(Check("tool_calls", {"adk": "pass", "data": "warn", "none": "warn"}[kind], S_TOOLS,
                             TOOL_CALLS[kind].replace("in the probe answers", "in the answers")))
        return out
