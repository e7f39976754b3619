"""Two custom function agents in Vertex AI's shape: ``fn(prompt) -> {"response", "predicted_trajectory"}``.

``careful_agent`` follows the dataset's references; ``hasty_agent`` skips, guesses and reorders.
"""

from __future__ import annotations

from typing import Any

from ..policy import decide
from ..tools import call_tool

MAX_STEPS = 8


def _run(prompt: str, style: str) -> dict[str, Any]:
    outputs: list[list[str]] = []
    trajectory: list[dict[str, Any]] = []
    for _ in range(MAX_STEPS):
        step = decide(prompt, outputs, style)
        if isinstance(step, str):
            return {"response": step, "predicted_trajectory": trajectory}
        results = []
        for name, args in step:
            out = call_tool(name, args)
            call = {"tool_name": name, "tool_input": args, "tool_output": out}
            if out.startswith("Error"):
                call["error"] = out
            trajectory.append(call)
            results.append(out)
        outputs.append(results)
    return {"response": "I gave up after too many steps.", "predicted_trajectory": trajectory}


def careful_agent(prompt: str) -> dict[str, Any]:
    """Looks things up before acting and does every step the request needs."""
    return _run(prompt, "careful")


def hasty_agent(prompt: str) -> dict[str, Any]:
    """Acts at once: skips look-ups, guesses values, reorders and drops calls."""
    return _run(prompt, "hasty")
