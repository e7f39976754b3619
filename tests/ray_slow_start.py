"""An agent whose module takes longer to import than the Ray tests' heartbeat: a worker that
unpickles it is slow to start, as one installing a runtime_env or on a cold node is."""

from __future__ import annotations

import time

from samples.home_automation.agents.function_agents import careful_agent

IMPORT_SECONDS = 6.0  # the tests' heartbeat is 3 s
time.sleep(IMPORT_SECONDS)


def slow_start_agent(prompt: str) -> dict:
    """The careful agent, once its module is imported."""
    return careful_agent(prompt)
