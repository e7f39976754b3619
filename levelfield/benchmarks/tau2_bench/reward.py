"""τ²'s reward, by τ²'s own evaluator: a run's conversation and tool calls become a τ² ``SimulationRun``.

The messages are built as τ²'s orchestrator builds them: the user's messages, each tool call as an
assistant message paired (by id) with the tool's answer, the agent's text replies. τ²'s evaluator then
replays the calls on a fresh environment set up as the task says, compares its database with the one the
task's reference actions give, checks the environment assertions, the actions and the information the
agent had to communicate, and multiplies the parts the task's reward basis names.

The termination reason is set explicitly (τ² scores 0 unless the agent or the user stopped): a conversation
the simulated user ended is ``user_stop``; a one-turn row (solo mode) ``agent_stop``; one that ran out of
turns ``max_steps``.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Mapping
from typing import Any

from ..._core.score.metrics.base import NAN, Metric, Score, ScoringContext
from ._package import evaluator_domain, tau2_package

__all__ = ["Tau2Reward", "Tau2RewardPart", "simulation_of", "PARTS"]

PARTS = {"db": "DB", "env_assertion": "ENV_ASSERTION", "action": "ACTION", "communicate": "COMMUNICATE"}
"""The parts of τ²'s reward levelfield reports (metric ``tau2_<part>``) and their τ² ``RewardType`` names."""


def _content(call: Any) -> str:
    """The tool's answer as τ²'s message text (ADK wraps a text result as ``{"result": text}``)."""
    output = call.tool_output
    if isinstance(output, Mapping) and set(output) == {"result"}:
        output = output["result"]
    if isinstance(output, str):
        return output
    return tau2_package().Environment.to_json_str(output)


def simulation_of(ctx: ScoringContext, task: Any, *, solo: bool) -> tuple[Any, list[str]]:
    """The τ² ``SimulationRun`` of one scored row, and notes on what was left out of it."""
    t = tau2_package()
    msg = t.message
    messages: list[Any] = []
    notes: list[str] = []
    used: set[str] = set()
    exchanges = ctx.exchanges()
    for turn, exchange in enumerate(exchanges):
        if not solo and exchange.prompt:
            messages.append(msg.UserMessage(role="user", content=exchange.prompt))
        for i, call in enumerate(exchange.predicted_trajectory):
            if call.error is not None:
                # It raised before τ²'s environment answered (an injected fault): it never reached the world.
                notes.append(f"turn {turn + 1}: call {call.tool_name} left out (it raised: {call.error})")
                continue
            call_id = str(call.id or f"lf-{turn}-{i}")
            while call_id in used:  # ids must pair one call with one answer
                call_id += "'"
            used.add(call_id)
            messages.append(msg.AssistantMessage(role="assistant", tool_calls=[
                msg.ToolCall(id=call_id, name=call.tool_name, arguments=dict(call.tool_input or {}),
                             requestor="assistant")]))
            content = _content(call)
            messages.append(msg.ToolMessage(id=call_id, role="tool", content=content, requestor="assistant",
                                            error=content.startswith("Error:")))
        if exchange.response:
            messages.append(msg.AssistantMessage(role="assistant", content=exchange.response))
    status = ctx.metadata.get("conversation_status")
    if status in ("finished", "replayed"):
        reason = t.simulation.TerminationReason.USER_STOP
    elif status == "max_turns":
        reason = t.simulation.TerminationReason.MAX_STEPS
    else:  # one turn: the agent's answer ends it
        reason = t.simulation.TerminationReason.AGENT_STOP
    run = t.simulation.SimulationRun(id=f"{ctx.case_id}", task_id=task.id, start_time="", end_time="",
                                     duration=float(ctx.duration_seconds or 0.0), termination_reason=reason,
                                     messages=messages)
    return run, notes


class _Evaluations:
    """τ²'s evaluation of each row, computed once for ``tau2_reward`` and its parts (a small cache)."""

    def __init__(self, size: int = 256) -> None:
        self._done: collections.OrderedDict[int, tuple[ScoringContext, Any]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, ctx: ScoringContext, evaluate: Any) -> Any:
        with self._lock:
            hit = self._done.get(id(ctx))
            if hit is not None and hit[0] is ctx:
                return hit[1]
        result = evaluate(ctx)
        with self._lock:
            self._done[id(ctx)] = (ctx, result)  # ctx held: its id cannot be reused while cached
            while len(self._done) > self._size:
                self._done.popitem(last=False)
        return result


class Tau2Reward(Metric):
    """``tau2_reward``: τ²'s reward for the row, from τ²'s own evaluator (1 or 0 on τ²'s tasks), its
    explanation (each check, met or not) in ``tau2_reward/explanation``."""

    reads = None

    def __init__(self, benchmark: Any, *, name: str = "tau2_reward") -> None:
        self.benchmark = benchmark
        self.name = name
        self._cache = _Evaluations()

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and ctx.case_id in self.benchmark.tasks

    def evaluation(self, ctx: ScoringContext) -> tuple[Any, list[str]]:
        """τ²'s ``RewardInfo`` for the row, and notes on calls left out of its simulation."""
        return self._cache.get(ctx, self._evaluate)

    def _evaluate(self, ctx: ScoringContext) -> tuple[Any, list[str]]:
        t = tau2_package()
        task = self.benchmark.tasks[ctx.case_id]
        simulation, notes = simulation_of(ctx, task, solo=self.benchmark.solo)
        try:
            info = t.evaluate_simulation(simulation=simulation, task=task, evaluation_type=t.EvaluationType.ALL,
                                         solo_mode=self.benchmark.solo,
                                         domain=evaluator_domain(self.benchmark.domain))
        except ValueError as exc:
            # τ²'s replay refused the conversation (a tool answer the environment does not give again):
            # scored 0, as τ² scores a run it cannot replay, and said why.
            return None, [*notes, f"τ²'s evaluator could not replay the run: {exc}"]
        return info, notes

    def score(self, ctx: ScoringContext) -> Score:
        info, notes = self.evaluation(ctx)
        if info is None:
            return Score(0.0, explanation="; ".join(notes))
        return Score(float(info.reward), explanation=explain(info, notes))


class Tau2RewardPart(Metric):
    """``tau2_<part>``: one factor of τ²'s reward (``db``, ``env_assertion``, ``action``, ``communicate``),
    NaN for a task whose reward basis leaves that part out."""

    reads = None

    def __init__(self, reward: Tau2Reward, part: str) -> None:
        if part not in PARTS:
            raise ValueError(f"Tau2RewardPart(part={part!r}): one of {', '.join(PARTS)}")
        self.reward = reward
        self.part = part
        self.name = f"tau2_{part}"

    def computable(self, ctx: ScoringContext) -> bool:
        if not self.reward.computable(ctx):
            return False
        basis = self.reward.benchmark.tasks[ctx.case_id].evaluation_criteria
        return basis is not None and PARTS[self.part] in {b.value if hasattr(b, "value") else str(b)
                                                          for b in basis.reward_basis}

    def score(self, ctx: ScoringContext) -> float:
        info, _ = self.reward.evaluation(ctx)
        if info is None:
            return 0.0
        breakdown = {getattr(k, "value", str(k)): v for k, v in (info.reward_breakdown or {}).items()}
        value = breakdown.get(PARTS[self.part])
        return NAN if value is None else float(value)


def explain(info: Any, notes: list[str] | None = None) -> str:
    """τ²'s checks of one run in words: the database, each assertion, action and piece of information."""
    lines: list[str] = []
    basis = [getattr(b, "value", str(b)) for b in (info.reward_basis or [])]
    lines.append(f"reward {info.reward:g} (basis: {', '.join(basis) or 'none'})")
    if info.db_check is not None:
        lines.append(f"database {'matches' if info.db_check.db_match else 'differs from'} the reference path's")
    for check in info.env_assertions or []:
        lines.append(f"assertion {check.env_assertion.func_name}: {'met' if check.met else 'NOT met'}")
    counted = "ACTION" in basis
    for check in info.action_checks or []:
        action = check.action
        lines.append(f"{'' if counted else '(not in the reward) '}action {action.name}({json.dumps(action.arguments, sort_keys=True, default=str)}): "
                     f"{'done' if check.action_match else 'NOT done'}")
    for check in info.communicate_checks or []:
        lines.append(f"communicate {check.info!r}: {'said' if check.met else 'NOT said'}")
    note = (info.info or {}).get("note") if isinstance(info.info, Mapping) else None
    if note:
        lines.append(str(note))
    lines.extend(notes or [])
    return "; ".join(lines)
