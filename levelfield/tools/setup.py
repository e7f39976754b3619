"""``tools=`` and ``faults=`` of an evaluation: checked, the agents levelled, and what it did reported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._core.errors import ConfigError, ConfigTypeError, LevelfieldWarning
from .._core.run.notices import warn_user
from .cassette import ToolCassette
from .faults import Faults
from .level import Leveller
from .summary import tool_counts

__all__ = ["Levelling", "levelling", "NotLevelledWarning"]


class NotLevelledWarning(LevelfieldWarning):
    """An agent of a levelled evaluation whose tools cannot be levelled (a remote agent, ...)."""


class Levelling:
    """The agents of one evaluation, levelled or not, and what the record and the report say of it."""

    def __init__(self, agents: Sequence[Any], leveller: Leveller | None,
                 notes: Mapping[str, Mapping[str, Any]]) -> None:
        self.agents = list(agents)
        self.leveller = leveller
        self.notes = {name: dict(note) for name, note in notes.items()}

    @property
    def header(self) -> dict[str, Any] | None:
        """The run record's ``tools`` header field (None: nothing levelled)."""
        if self.leveller is None:
            return None
        return {**self.leveller.describe(), "agents": self.notes}

    def close(self) -> None:
        if self.leveller is not None:
            self.leveller.close()

    def report(self, results: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
        """Per agent: ``levelled``, ``how`` or ``why`` not, and the counts of its runs' calls (``tool_counts``)."""
        if self.leveller is None:
            return None
        out: dict[str, dict[str, Any]] = {}
        for name, result in results.items():
            note = dict(self.notes.get(name, {"levelled": False, "why": "joined from saved runs"}))
            note["counts"] = tool_counts(getattr(result, "runs", []) or [])
            out[name] = note
        return out

    def attach(self, results: Mapping[str, Any]) -> None:
        """Each result gets its agent's part of the report as ``result.tool_levelling``."""
        report = self.report(results)
        for name, result in results.items():
            result.tool_levelling = None if report is None else report.get(name)
            result.tools_header = self.header


def levelling(tools: Any, faults: Any, config: Any, agents: Sequence[Any], *, ships: bool) -> Levelling:
    """Check ``tools``/``faults`` and level each agent's tools. ``ships``: the runs execute in other processes."""
    if tools is None and faults is None:
        return Levelling(agents, None, {})
    from .environment import ToolEnvironment

    environment = None
    if isinstance(tools, ToolEnvironment):
        environment, tools = tools, None
    elif tools is not None and not isinstance(tools, ToolCassette):
        raise ConfigTypeError(f"tools={tools!r}: pass lf.ToolCassette(path, mode='record' | 'replay' | "
                              "'record_missing'), or an environment (name, tool_specs() and reset(case_id, trial); "
                              "e.g. lf.benchmarks.tau2('retail').environment)")
    if faults is not None and not isinstance(faults, Faults):
        raise ConfigTypeError(f"faults={faults!r}: pass lf.Faults(rate=0.1, seed=7, kinds=(...), tools=None)")
    if getattr(config, "isolation", None) == "process" or ships:
        process = getattr(config, "isolation", None) == "process"
        where = "isolation='process'" if process else f"executor={config.executor!r}"
        raise ConfigError(f"tools=/faults= level tools in this process; they do not combine with {where} yet: run "
                          "the agents in this process")
    from .agents import is_remote, level_agent

    leveller = Leveller(tools, faults, environment)
    levelled, notes, tool_names = [], {}, {}
    for agent in agents:
        wrapped, note = level_agent(agent, leveller)
        levelled.append(wrapped)
        tool_names[agent.name] = note.pop("tools", None)  # not recorded: what the faults' names are checked against
        notes[agent.name] = note
        if not note["levelled"] and environment is not None:
            raise ConfigError(_cannot_act(agent.name, environment, note["why"], remote=is_remote(agent)))
        if not note["levelled"]:
            warn_user(NotLevelledWarning(f"agent {agent.name!r}: its tools are not levelled ({note['why']}); it meets "
                                         "its own live tools and no injected faults"))
    _warn_unknown_fault_tools(faults, tool_names)
    return Levelling(levelled, leveller, notes)


def _cannot_act(agent: str, environment: Any, why: str, *, remote: bool) -> str:
    """Why an agent whose tools levelfield cannot reach is refused an environment, and what to do instead."""
    text = f"agent {agent!r} cannot act in environment {environment.name!r}: {why}. "
    if not remote:
        return text + ("An environment answers only the tool calls levelfield intercepts in this process: give the "
                       "agent the environment's tools (a ToolNode's, an ADK agent's, a function agent's 'tools' "
                       "parameter)")
    wire = getattr(environment, "remote_note", None)
    return text + ("An environment's state lives in this process and answers only the tool calls levelfield "
                   "intercepts here, so a remote agent's calls never reach it"
                   + (f"; {wire}" if wire else "; the environment defines no protocol for a remote agent to reach it")
                   + ". Build the agent in this process with the environment's tools (a benchmark's "
                   "tools('langchain' | 'adk' | 'function')) and pass the agent itself, not its URL or deployment")


def _warn_unknown_fault_tools(faults: Faults | None, tool_names: dict[str, list[str] | None]) -> None:
    """``Faults(tools=[...])`` naming a tool none of the agents has: it would inject nothing there, silently.
    Decided only when every agent's tools are known (an ADK agent's are not read here)."""
    if faults is None or not faults.tools or not tool_names or any(n is None for n in tool_names.values()):
        return
    known = sorted({t for names in tool_names.values() for t in names or ()})
    unknown = [t for t in faults.tools if t not in known]
    if unknown:
        from .faults import FaultsWarning

        warn_user(FaultsWarning(f"Faults(tools=...): {', '.join(map(repr, unknown))} is a tool of none of the agents, "
                                f"so no fault hits it; their tools are {', '.join(known) or '(none)'}"))
