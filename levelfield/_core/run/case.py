"""One run of one case: its turns in order, each retried, and the failed run of a turn that failed.

Each turn is one call of the agent, retried as ``levelfield._core.run.retry`` says (only what the
adapter marks transient), each attempt timed out and watched (``levelfield._core.run.attempt``).
Whatever the agent did, the case ends as an ``AgentRun``; conversations with a simulated user
(``levelfield._core.run.conversation``) reuse the turn and the failed run from here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..data.config import RunConfig
from ..data.dataset import EvalCase
from ..data.protocol import AgentRequest, AgentRunnable
from ..data.types import AgentOutput, AgentRun, Message
from . import endpoints
from .attempt import _attempt
from .failures import attribute, describe_error, exception_text
from .retry import call_with_retries
from .scope import CURRENT_SCOPE
from .threads import stopping
from .tracebacks import redact, traceback_text

__all__ = ["run_case", "failed_turn_run", "Spent"]  # and, for conversations, _run_turn


class Spent:
    """What a run spent waiting on limits: seconds, and rate-limit answers absorbed."""

    __slots__ = ("waited", "rate_limited")

    def __init__(self) -> None:
        self.waited = 0.0
        self.rate_limited = 0

    def add(self, seconds: float, absorbed: bool) -> None:
        """A wait on an endpoint's limit: ``absorbed`` when it waited out a rate-limit answer."""
        self.waited += seconds
        if absorbed:
            self.rate_limited += 1

    def fields(self) -> dict[str, Any]:
        """As ``AgentRun`` fields."""
        return {"waited_seconds": round(self.waited, 6), "rate_limited": self.rate_limited}


def _output_tokens(output: AgentOutput) -> int | None:
    usage = output.usage
    return usage.total_tokens if usage is not None else None


async def _run_turn(
    agent: AgentRunnable, request: AgentRequest, config: RunConfig, spent: Spent | None = None
) -> tuple[AgentOutput | None, BaseException | None, float, int]:
    """One turn of a run, retried: (output or None, error or None, the last attempt's seconds, attempts).
    Only what the adapter marks transient is retried: it knows its framework's errors."""
    registry = endpoints.current()
    tried = await call_with_retries(
        lambda: _attempt(agent, request, config.timeout),
        retries=config.retries,
        backoff=config.backoff,
        limit=None if registry is None else registry.for_agent(agent),
        timeout=config.timeout,
        tokens=_output_tokens,
        on_wait=None if spent is None else spent.add,
    )
    return tried.value, tried.error, tried.latency, tried.attempts


def failed_turn_run(
    agent: AgentRunnable,
    case: EvalCase,
    trial: int,
    request: AgentRequest,
    error: BaseException,
    *,
    where: str,
    latency: float,
    attempts: int,
    turns: list[AgentOutput],
    **fields: Any,
) -> AgentRun:
    """The failed run of a turn that failed: its error (prefixed by ``where``, e.g. "turn 2 of 3: ")
    and type, and what it had produced — the error's ``partial`` or the adapter's own account
    (``agent.partial_output(request)``, e.g. a timed-out graph's calls so far). Never raises."""
    text, error_type = describe_error(error)
    failure_class, failure_rule = _failure_class(agent, error, request)
    from_tool = _raised_by_a_tool(error)
    if from_tool is not None and error_type != "tool_error":
        # The same for every framework: the tool's error, not the wrapper a framework put around it
        # (ADK's "Error in plugin ..." RuntimeError, a function agent's bare exception).
        error_type = "tool_error"
        text = (f"agent {agent.name!r} on case {case.case_id!r}: a tool raised and the agent did not handle it: "
                f"{exception_text(from_tool)}")
    kept = None
    if (error_type, text) != ("timeout", "timed out"):
        # The runner's own timeout has only levelfield's frames: what the agent raised is worth keeping.
        kept = traceback_text(error, _redactor(agent))
    text = redact(text, _redactor(agent))  # the message too: the record is kept and shared
    partial = attribute(error, "partial")
    if partial is None and hasattr(agent, "partial_output"):
        try:
            partial = agent.partial_output(request)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - what a failed run had is a bonus, never a crash
            partial = None
    return AgentRun(
        case_id=case.case_id,
        agent_name=agent.name,
        trial=trial,
        output=None,
        latency_in_seconds=latency,
        failure=True,
        error=f"{where}{text}",
        error_type=error_type,
        attempts=attempts,
        partial_output=partial if isinstance(partial, AgentOutput) else None,
        turns=turns,
        failure_class=failure_class,
        failure_rule=failure_rule,
        traceback=kept,
        **fields,
    )


def _raised_by_a_tool(error: BaseException) -> BaseException | None:
    """The exception a levelled tool of this run raised that ``error`` is, or was raised from; None if none."""
    scope = CURRENT_SCOPE.get()
    if scope is None or not scope.raised:
        return None
    raised = {id(e) for e in scope.raised}
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 50:
        if id(current) in raised:
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _redactor(agent: AgentRunnable) -> Any:
    redact = getattr(agent, "redact", None)
    return redact if callable(redact) else None


def _failure_class(agent: AgentRunnable, error: BaseException, request: AgentRequest) -> tuple[str | None, str | None]:
    """Whose fault the failure was, when the agent can tell (``agent.classify_failure``, A2A agents). Never raises."""
    classify = getattr(agent, "classify_failure", None)
    if classify is None:
        return None, None
    try:
        found, rule = classify(error, request)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a classification is a bonus, never a crash
        return None, None
    return (found if isinstance(found, str) else None), (rule if isinstance(rule, str) else None)


async def run_case(agent: AgentRunnable, case: EvalCase, trial: int, config: RunConfig, run_id: str) -> AgentRun:
    """Run one case (all its turns) once; always returns an AgentRun."""
    session_id = f"lf-{run_id}-{case.case_id}-{trial}"
    prompts = [t.prompt for t in case.turns] if case.turns else [case.prompt or ""]
    history: list[Message] = list(case.history)
    turns: list[AgentOutput] = []
    latency = 0.0
    attempts = 0
    spent = Spent()
    for index, prompt in enumerate(prompts):
        # Validated: pydantic's compiled validator is faster than model_construct's Python loop.
        request = AgentRequest(
            prompt=prompt,
            history=list(history),
            case_id=case.case_id,
            session_id=session_id,
            turn=index,
            state=dict(case.state),
        )
        output, error, turn_latency, turn_attempts = await _run_turn(agent, request, config, spent)
        latency += turn_latency
        attempts = max(attempts, turn_attempts)
        if error is not None:
            where = f"turn {index + 1} of {len(prompts)}: " if len(prompts) > 1 else ""
            return failed_turn_run(agent, case, trial, request, error, where=where, latency=latency,
                                   attempts=attempts, turns=turns, **spent.fields())
        turns.append(output)
        if index + 1 < len(prompts) and stopping():
            raise asyncio.CancelledError  # stopped during this turn: the case is left whole for resume
        if index + 1 < len(prompts):
            history += [Message(role="user", content=prompt), Message(role="assistant", content=output.response)]
    return AgentRun(
        case_id=case.case_id,
        agent_name=agent.name,
        trial=trial,
        output=turns[-1],
        latency_in_seconds=latency,
        failure=False,
        attempts=attempts,
        turns=turns if len(turns) > 1 else [],
        **spent.fields(),
    )
