"""Each A2A agent's conformance preflight (``RunConfig(a2a_preflight=True)``), passive by default.

Before the first case an agent that can check itself (``agent.apreflight(...)``, as ``A2AAgent``
does) has its card read and checked; no message is sent unless the user says the agent has no side
effects (``RunConfig(a2a_probe=True)``): a probe is a task the agent runs, and one that books, pays or
writes would do it again. The evaluation's own answers are checked instead as they arrive (parts,
task states, errors, ``Retry-After``: ``agent.observed()``), and :func:`with_traffic` adds what they
showed to the card's checks after the runs. The result (``Preflight.to_dict()``) goes into the run
record and the results, and a check that fails is warned about. When an agent exposes its tool calls
only as plain data parts nobody reads (or, probed, none for a case that expects some), its trajectory
metrics say so on each run without calls instead of scoring 0. The core does not know A2A: it only
calls what the agent offers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.config import RunConfig
from ..data.dataset import EvalDataset
from ..data.protocol import AgentRunnable
from .failures import describe_error
from .notices import LevelfieldWarning, warn_user

__all__ = ["A2APreflightWarning", "run_preflights", "hidden_tool_calls", "observed_hidden", "with_traffic", "NOT_EXPOSED"]

NOT_EXPOSED = "this agent does not expose its tool calls over A2A"


class A2APreflightWarning(LevelfieldWarning):
    """An A2A agent failed a check of its conformance preflight (or it could not run): its failed runs
    are likely the protocol's fault, and each says so (``AgentRun.failure_class``)."""


def _first_prompt(dataset: EvalDataset) -> str | None:
    for case in dataset:
        if case.turns:
            return case.turns[0].prompt
        if case.prompt:
            return case.prompt
    return None


async def _one(agent: AgentRunnable, prompt: str | None, config: RunConfig) -> dict[str, Any]:
    try:
        # The version the agent will be run over only, and probes only when asked: each is a task the agent
        # runs. Each of its reads (the card too) is bounded by the run's timeout as a whole.
        seconds = {} if config.timeout is None else {"timeout": config.timeout}
        found = await agent.apreflight(prompt, every_version=False, probe=config.a2a_probe,  # type: ignore[attr-defined]
                                       **seconds)
    except Exception as exc:  # noqa: BLE001 - the runs will say what is wrong; the evaluation goes on
        text, _ = describe_error(exc)
        warn_user(A2APreflightWarning(f"agent {agent.name!r}: the A2A preflight could not run: {text}"))
        return {"error": text}
    failed = [c for c in found.checks if c.status == "fail"]
    if failed:
        said = "; ".join(f"{c.name}{' (' + c.version + ')' if c.version else ''}: {c.detail}" for c in failed[:3])
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        warn_user(A2APreflightWarning(
            f"agent {agent.name!r} does not conform to A2A: {said}{more}. Its failed runs that break the spec are "
            "counted as protocol failures, not the agent's; `levelfield a2a-check URL` shows every check"))
    return found.to_dict()


async def run_preflights(dataset: EvalDataset, agents: Sequence[AgentRunnable], config: RunConfig) -> dict[str, dict[str, Any]]:
    """Each A2A agent's preflight by name (agents that offer ``apreflight``); {} when turned off."""
    checked = [a for a in agents if callable(getattr(a, "apreflight", None))]
    if not config.a2a_preflight or not checked:
        return {}
    from . import budget

    prompt = _first_prompt(dataset)
    cap = budget.set_response_cap(config.max_response_bytes)  # the card and the probes read as a run's answer is
    try:
        found = await asyncio.gather(*(_one(a, prompt, config) for a in checked))
    finally:
        budget.reset_response_cap(cap)
    return {a.name: f for a, f in zip(checked, found)}


def _plain_data_said() -> str:
    return (f"{NOT_EXPOSED} in a form levelfield reads: the calls come as plain data parts without "
            "metadata adk_type (mark them the ADK way, or pass A2AAgent(trajectory_extractor=...)); not scored")


def observed_hidden(agents: Sequence[AgentRunnable], preflights: Mapping[str, Any]) -> dict[str, str]:
    """Agents whose answers so far carried tool calls only as plain data parts (the passive preflight's
    finding), each with what to say on its runs without calls."""
    out: dict[str, str] = {}
    for agent in agents:
        observed = getattr(agent, "observed", None)
        if agent.name in preflights and callable(observed) and observed().get("tool_calls") == "data":
            out[agent.name] = _plain_data_said()
    return out


def with_traffic(preflights: Mapping[str, dict[str, Any]], agents: Sequence[AgentRunnable]) -> dict[str, dict[str, Any]]:
    """Each preflight with what the agent's own answers showed (``agent.observed()``) added to its checks
    (a probed row of the same name is replaced); a failed traffic check is warned about."""
    out = {name: dict(found) for name, found in preflights.items()}
    for agent in agents:
        found = out.get(agent.name)
        observed = getattr(agent, "observed", None)
        if found is None or "error" in found or not callable(observed):
            continue
        seen = observed()
        rows = list(seen.get("checks") or [])
        names = {r["name"] for r in rows}
        found["checks"] = [c for c in found.get("checks") or [] if c.get("name") not in names] + rows
        if seen.get("tool_calls", "unknown") != "unknown":
            found["tool_calls"] = seen["tool_calls"]
        found["ok"] = not any(c.get("status") == "fail" for c in found["checks"])
        failed = [r for r in rows if r.get("status") == "fail"]
        if failed:
            said = "; ".join(f"{r['name']}: {r['detail']}" for r in failed[:3])
            warn_user(A2APreflightWarning(
                f"agent {agent.name!r}: its answers broke A2A: {said}. Those failed runs are counted as protocol "
                "failures, not the agent's; `levelfield a2a-check URL` shows every check"))
    return out


def hidden_tool_calls(preflights: Mapping[str, Mapping[str, Any]], dataset: EvalDataset) -> dict[str, str]:
    """Agents whose preflight shows they expose no tool calls over A2A, each with what to say on its runs.

    Decided only when it can be: plain data parts that look like calls (never read), or no call at all
    in the answer to the first case when that case expects calls (its prompt is what was probed).
    """
    first = next(iter(dataset), None)
    expects = first is not None and bool(first.reference_trajectory or (first.turns and first.turns[0].reference_trajectory))
    out: dict[str, str] = {}
    for name, found in preflights.items():
        kind = found.get("tool_calls")
        if kind == "data":
            out[name] = _plain_data_said()
        elif kind == "none" and expects:
            out[name] = (f"{NOT_EXPOSED}: the preflight's answer to case {first.case_id!r}, which expects calls, "
                         "held none; not scored")
    return out
