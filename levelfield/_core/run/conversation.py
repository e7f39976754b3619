"""Conversations with a simulated user: scenario cases played out turn by turn, and replayed.

A scenario case (``EvalCase.conversation_scenario``) has no scripted turns: its first message is
the scenario's starting prompt, and every later one comes from a *user simulator* that reads the
conversation so far. The agent is driven exactly as a scripted multi-turn case drives it (same
``session_id`` for every turn, the history of earlier turns, the case's state), so every adapter
keeps one thread / context / session per conversation.

Replay: in a comparison every agent must face the same user, or paired statistics compare
different conversations. A live simulator (an LLM) does not answer the same way twice, and even a
deterministic one answers what each agent said. So the first agent to reach a (case, trial)
plays it with the live simulator; its user turns are recorded and fed verbatim to every other
agent on that (case, trial). If that first conversation failed (agent or simulator), the next
agent plays live instead, so one broken run never leaves the others without a user.

Faults of the simulator are not the agent's: a simulator that raises, says nothing, or ends
before its plan is complete makes a run with ``conversation.simulator_failure`` set; that run is
not an agent failure, is left out of the agent's scores (NaN) and is counted apart.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from ..data.config import RunConfig
from ..data.dataset import EvalCase, Scenario
from ..data.protocol import AgentRequest, AgentRunnable
from ..data.types import AgentOutput, AgentRun, Conversation, ConversationStatus, Message, Usage
from ..errors import ConfigTypeError
from . import endpoints
from .case import Spent, _run_turn, failed_turn_run
from .failures import cancelled_from_outside, describe_error
from .interrupts import user_interrupted
from .retry import call_with_retries, is_transient
from .threads import run_sync

__all__ = [
    "UserTurn",
    "Exchange",
    "SimulatedUser",
    "ReplayedUser",
    "Conversations",
    "run_conversation",
    "DEFAULT_MAX_TURNS",
]

DEFAULT_MAX_TURNS = 10
"""Agent turns a conversation may take by default (the starting prompt counts as the first)."""


@dataclass(frozen=True)
class UserTurn:
    """What a simulated user does next: say ``text``, or end the conversation (``text=None``)."""

    text: str | None = None
    """The user's next message; None ends the conversation."""
    plan_complete: bool | None = None
    """When the user ends: whether its plan was carried out (False makes a simulator failure:
    the conversation stopped short through no fault of the agent). None: the simulator cannot tell."""
    usage: Usage | None = None
    """Tokens the simulator spent producing this turn."""


@dataclass(frozen=True)
class Exchange:
    """One turn of a conversation: what the user said and what the agent answered."""

    user: str
    agent: AgentOutput


@runtime_checkable
class SimulatedUser(Protocol):
    """A user simulator: from the scenario and the conversation so far, the user's next turn.

    It must not keep per-conversation state (one instance serves many conversations at once):
    everything it needs is in ``scenario`` and ``transcript``.
    """

    max_turns: int
    """Agent turns at most, the starting prompt's included."""

    async def next_turn(self, scenario: Scenario, transcript: Sequence[Exchange]) -> UserTurn: ...


class ReplayedUser:
    """A user that says recorded messages verbatim, in order, then ends (the replay of a conversation)."""

    def __init__(self, user_turns: Sequence[str], source: str | None = None) -> None:
        self.user_turns = list(user_turns)
        self.source = source
        self.max_turns = len(self.user_turns)

    async def next_turn(self, scenario: Scenario, transcript: Sequence[Exchange]) -> UserTurn:
        index = len(transcript)
        if index < len(self.user_turns):
            return UserTurn(self.user_turns[index])
        return UserTurn(None)


async def _ask(user: SimulatedUser, scenario: Scenario, transcript: Sequence[Exchange], config: RunConfig,
               spent: Spent | None = None) -> UserTurn:
    """The user's next turn, under the run's timeout, transient errors retried with the run's
    retries and backoff; raises what the simulator's last try raised.

    A simulator that calls a model names it (``endpoint``): its calls then go through that
    endpoint's limit (adaptive concurrency, ``requests_per_minute`` / ``tokens_per_minute`` under
    the ``"simulator"`` key), and its rate-limit answers are absorbed as an agent's are (their
    waits count in the run's ``waited_seconds``; ``rate_limited`` counts the agent's alone)."""
    endpoint = getattr(user, "endpoint", None)
    registry = endpoints.current()
    limit = None
    if registry is not None and isinstance(endpoint, str):
        limit = registry.for_service("simulator", endpoint, config.concurrency)

    def call() -> Any:
        turn = _next_turn(user, scenario, list(transcript))
        return turn if config.timeout is None else asyncio.wait_for(turn, config.timeout)

    tried = await call_with_retries(
        call,
        retries=config.retries,
        backoff=config.backoff,
        # A model's "try again later" is retried; the run's own timeout is not.
        transient=_simulator_transient,
        limit=limit,
        timeout=config.timeout,
        tokens=_turn_tokens,
        on_wait=None if spent is None else (lambda seconds, absorbed: spent.add(seconds, False)),
    )
    if tried.error is not None:
        raise tried.error
    return cast(UserTurn, tried.value)  # what the simulator's next_turn gave: a UserTurn by its protocol


def _simulator_transient(exc: BaseException) -> bool:
    return is_transient(exc, provider_errors=True)


def _turn_tokens(turn: Any) -> int | None:
    usage = getattr(turn, "usage", None)
    return usage.total_tokens if isinstance(usage, Usage) else None


async def _next_turn(user: SimulatedUser, scenario: Scenario, transcript: list[Exchange]) -> Any:
    """The simulator's next turn: an async ``next_turn`` awaited on the loop, a sync one run on a
    worker thread as a sync agent is, so the run's timeout holds for it and a hang holds one thread."""
    next_turn = user.next_turn
    if inspect.iscoroutinefunction(next_turn):
        return await next_turn(scenario, transcript)
    turn: Any = await run_sync(next_turn, scenario, transcript)
    if inspect.isawaitable(turn):
        turn = await turn
    return turn


def _add(total: Usage | None, more: Usage | None) -> Usage | None:
    if more is None:
        return total
    return more if total is None else total + more


async def run_conversation(
    agent: AgentRunnable,
    case: EvalCase,
    trial: int,
    config: RunConfig,
    run_id: str,
    user: SimulatedUser,
    *,
    replayed_from: str | None = None,
) -> AgentRun:
    """Play one scenario case with ``user`` once; always returns an AgentRun (never raises for a fault)."""
    scenario = case.scenario
    assert scenario is not None, "run_conversation needs a scenario case"
    session_id = f"lf-{run_id}-{case.case_id}-{trial}"
    limit = max(1, int(user.max_turns))
    history: list[Message] = list(case.history)
    transcript: list[Exchange] = []
    user_turns: list[str] = []
    outputs: list[AgentOutput] = []
    latency = 0.0
    attempts = 0
    agent_usage: Usage | None = None
    simulator_usage: Usage | None = None
    spent = Spent()

    def record(status: ConversationStatus, **fields: Any) -> Conversation:
        return Conversation(
            user_turns=list(user_turns),
            status=status,
            replayed_from=replayed_from,
            agent_usage=agent_usage,
            simulator_usage=simulator_usage,
            **fields,
        )

    def finished(conversation: Conversation) -> AgentRun:
        return AgentRun(
            case_id=case.case_id,
            agent_name=agent.name,
            trial=trial,
            output=outputs[-1] if outputs else None,
            latency_in_seconds=latency,
            failure=False,
            attempts=max(attempts, 1),
            turns=list(outputs),
            conversation=conversation,
            **spent.fields(),
        )

    prompt: str | None = scenario.starting_prompt
    status: ConversationStatus = "max_turns"
    for index in range(limit):
        if index > 0:
            # The simulator's time is not the agent's latency; its faults are not the agent's.
            try:
                turn = await _ask(user, scenario, transcript, config, spent)
            except asyncio.CancelledError as exc:
                # The evaluation's cancellation stops it (Python 3.10 cannot tell: stop too); the
                # simulator's own CancelledError is its failure, as an agent's is.
                if getattr(asyncio.current_task(), "cancelling", None) is None or cancelled_from_outside():
                    raise
                text, _ = describe_error(exc)
                return finished(record("simulator_failure", simulator_failure=True, error=f"turn {index + 1}: the simulated user failed: {text}"))
            except KeyboardInterrupt as exc:
                if user_interrupted():
                    raise  # the user's Ctrl-C: it stops the evaluation
                text, _ = describe_error(exc)
                return finished(record("simulator_failure", simulator_failure=True, error=f"turn {index + 1}: the simulated user failed: {text}"))
            except BaseException as exc:  # noqa: BLE001 - SystemExit & co. from a simulator fail its run, as an agent's
                text, _ = describe_error(exc)
                return finished(record("simulator_failure", simulator_failure=True, error=f"turn {index + 1}: the simulated user failed: {text}"))
            if not isinstance(turn, UserTurn):
                return finished(record(
                    "simulator_failure", simulator_failure=True,
                    error=f"turn {index + 1}: the simulator returned {type(turn).__name__}, not a UserTurn",
                ))
            simulator_usage = _add(simulator_usage, turn.usage)
            if turn.text is None:
                if turn.plan_complete is False:
                    return finished(record(
                        "simulator_failure", simulator_failure=True,
                        error=f"turn {index + 1}: the simulated user ended the conversation before its plan was complete",
                    ))
                status = "replayed" if replayed_from is not None else "finished"
                break
            if not turn.text.strip():
                return finished(record(
                    "simulator_failure", simulator_failure=True,
                    error=f"turn {index + 1}: the simulated user produced an empty message",
                ))
            prompt = turn.text
        assert prompt is not None
        request = AgentRequest.model_construct(
            prompt=prompt,
            history=list(history),
            case_id=case.case_id,
            session_id=session_id,
            turn=index,
            state=dict(case.state),
        )
        user_turns.append(prompt)
        output, error, turn_latency, turn_attempts = await _run_turn(agent, request, config, spent)
        latency += turn_latency
        attempts = max(attempts, turn_attempts)
        if error is not None:
            return failed_turn_run(agent, case, trial, request, error, where=f"conversation turn {index + 1}: ",
                                   latency=latency, attempts=attempts, turns=list(outputs),
                                   conversation=record("agent_failure"), **spent.fields())
        assert output is not None  # no error: the turn's output
        outputs.append(output)
        agent_usage = _add(agent_usage, output.usage)
        transcript.append(Exchange(prompt, output))
        history += [Message(role="user", content=prompt), Message(role="assistant", content=output.response)]
    else:
        if replayed_from is not None:
            status = "replayed"
    return finished(record(status))


class Conversations:
    """Plays the scenario cases of an evaluation: live with ``simulator`` for the first agent to
    reach a (case, trial), replayed verbatim for the others (see the module docstring).

    Pass it to ``run_agents(..., run_scenario=conversations)``. ``done`` holds runs finished
    earlier (a resumed journal): their recorded users are replayed, not simulated again.
    """

    def __init__(self, simulator: SimulatedUser, done: Mapping[tuple[str, str, int], AgentRun] | None = None) -> None:
        if not isinstance(simulator, SimulatedUser):
            raise ConfigTypeError(
                f"simulator={simulator!r}: expected a user simulator with max_turns and async next_turn(scenario, "
                "transcript), such as lf.UserSimulator(model) or lf.testing.ScriptedUser(rules)"
            )
        self.simulator = simulator
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._recorded: dict[tuple[str, int], tuple[str, list[str]]] = {}
        for run in (done or {}).values():
            self._keep(run)

    def _keep(self, run: AgentRun) -> None:
        conv = run.conversation
        if conv is None or run.failure or conv.simulator_failure or not conv.user_turns:
            return
        source = conv.replayed_from or run.agent_name
        self._recorded.setdefault((run.case_id, run.trial), (source, list(conv.user_turns)))

    def recorded(self, case_id: str, trial: int) -> list[str] | None:
        """The user turns every agent gets on (case, trial), once one conversation recorded them."""
        found = self._recorded.get((case_id, trial))
        return None if found is None else list(found[1])

    async def __call__(self, agent: AgentRunnable, case: EvalCase, trial: int, config: RunConfig, run_id: str) -> AgentRun:
        key = (case.case_id, trial)
        lock = self._locks.setdefault(key, asyncio.Lock())
        # Held while the live conversation runs, so the other agents wait for its user turns.
        async with lock:
            found = self._recorded.get(key)
            if found is None:
                run = await run_conversation(agent, case, trial, config, run_id, self.simulator)
                self._keep(run)
                return run
        source, turns = found
        return await run_conversation(agent, case, trial, config, run_id, ReplayedUser(turns, source), replayed_from=source)
