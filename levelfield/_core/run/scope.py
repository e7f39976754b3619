"""The run a piece of agent code is working for: its agent, case and trial, held in a context variable.

The runner sets it around each run (``run_agents``), so code deep inside an agent's framework (a
tool called on a worker thread or in a task the framework started: both copy the context) can tell
which case and trial it serves. Levelled tools (``levelfield.tools``) read it to answer from the
right cassette entry, to draw the run's faults and to note each call in ``AgentRun.tool_events``.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

__all__ = ["RunScope", "current_scope", "CURRENT_SCOPE"]


class RunScope:
    """One run in progress: who runs it, and what its levelled tool calls left behind."""

    __slots__ = ("agent", "case_id", "trial", "leveller", "tool_events", "counters", "fatal", "raised", "lock",
                 "environment")

    def __init__(self, agent: str, case_id: str, trial: int) -> None:
        self.agent = agent
        self.case_id = case_id
        self.trial = trial
        self.leveller: Any = None
        """What answers this run's tool calls (set by a levelled agent; None: tools run as they are)."""
        self.tool_events: list[dict[str, Any]] | None = None
        """Each levelled call, in the order made (None: the run's tools were not levelled)."""
        self.counters: dict[str, int] = {}
        """Calls made so far, per tool name (the call index of the fault schedule)."""
        self.fatal: BaseException | None = None
        """A levelling error the agent must not swallow (e.g. an output a cassette cannot store): fails the run."""
        self.raised: list[BaseException] = []
        """What the levelled tools raised to the agent (an injected fault, a live or recorded error): a run that
        fails with one of them (however a framework wrapped it) failed because a tool raised (``tool_error``)."""
        self.environment: Any = None
        """This run's own environment session (``tools=<an environment>``), opened at its first tool call."""
        self.lock = threading.Lock()  # tools may run on several threads of one run at once

    def next_index(self, tool: str) -> int:
        """The index of this run's next call of ``tool`` (0 for its first)."""
        with self.lock:
            index = self.counters.get(tool, 0)
            self.counters[tool] = index + 1
            return index


CURRENT_SCOPE: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar("levelfield_run_scope", default=None)


def current_scope() -> RunScope | None:
    """The run the calling code works for, or None outside an evaluation's run."""
    return CURRENT_SCOPE.get()
