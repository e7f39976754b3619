"""An agent that answers as the careful sample agent but raises on four of the home-automation cases:
the gate must count those runs (issue 55: ``--fail-under`` passed it at 1.000)."""

from __future__ import annotations

from typing import Any

from samples.home_automation.agents.function_agents import careful_agent

_SEEN: dict[str, int] = {}


def crashes_on_four(prompt: str) -> dict[str, Any]:
    """The careful agent's answer, except on the first four prompts it is given (in a fixed order: by text)."""
    import json
    from pathlib import Path

    rows = [json.loads(line) for line in Path("samples/home_automation/dataset.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    prompts = sorted(str(r["prompt"]) for r in rows)[:4]
    if prompt in prompts:
        raise RuntimeError("the device hub did not answer")
    return careful_agent(prompt)
