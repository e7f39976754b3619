"""The agents the Ray tests' workers load: by spec string (``"ray_agents:make_pid_agent"``), or by
reference when a worker unpickles one of them (``ExitOnce(...)``, ``slow_careful_agent``).

In a module of their own that imports only the sample agent, so that a worker starting does not
import the test module too (pytest, pandas, the test helpers): seconds of every worker's start on
a loaded machine, in a module that starts dozens of workers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from samples.home_automation.agents.function_agents import careful_agent

__all__ = ["ExitAlways", "ExitOnce", "broken_agent", "echo_cjk_agent", "make_pid_agent", "slow_careful_agent",
           "slowish_careful_agent", "where_agent"]


def make_pid_agent() -> Any:
    """A factory (built on each worker from the spec "ray_agents:make_pid_agent"): says where it was built and ran."""
    built = os.getpid()

    def pid_agent(prompt: str) -> str:
        return f"built {built} ran {os.getpid()}"

    return pid_agent


class ExitOnce:
    """careful_agent, except that on one case it kills its worker process, once (a marker file says it did)."""

    def __init__(self, marker: str, case_text: str = "device_2") -> None:
        self.marker = marker
        self.case_text = case_text

    def __call__(self, prompt: str) -> dict[str, Any]:
        if self.case_text in prompt and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        return careful_agent(prompt)


class ExitAlways:
    """careful_agent, except that on one case it kills its worker process every time."""

    def __call__(self, prompt: str) -> dict[str, Any]:
        if prompt == "Turn off device_2 in the Bedroom.":
            os._exit(1)
        return careful_agent(prompt)


def slow_careful_agent(prompt: str) -> dict[str, Any]:
    """careful_agent after 0.4 s (tests/executors/test_ray.py: a driver killed with runs in flight)."""
    time.sleep(0.4)
    return careful_agent(prompt)


def slowish_careful_agent(prompt: str) -> dict[str, Any]:
    """careful_agent after 0.25 s (tests/executors/test_ray_cluster.py: a node or the driver killed half way)."""
    time.sleep(0.25)
    return careful_agent(prompt)


def where_agent(prompt: str) -> str:
    """Says which Ray node ran it."""
    import ray

    time.sleep(0.05)
    return ray.get_runtime_context().get_node_id()


def echo_cjk_agent(prompt: str) -> str:
    """Answers every Chinese case but the third right; multi-byte text moves every journal offset."""
    if prompt.startswith("把第"):
        n = prompt[2:prompt.index("个")]
        return f"好的：第{n}个设备已关闭" if n != "2" else "没有这个设备"
    return "ライトを消しました"


def broken_agent(prompt: str) -> str:
    raise RuntimeError(f"kaputt, 坏了: {prompt[:10]}")
