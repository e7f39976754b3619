"""A judge and an agent for certifying judges from the command line, offline.

The agent repeats its prompt; the judge finds an answer valid when it holds ``JUDGE:PASS`` and invalid when it
holds ``JUDGE:FAIL`` (what the humans think of it is in a separate labels file). Pass them as
``--agent tests.judged_fixture.certify:echo --judge tests.judged_fixture.certify:judge``.
"""

from __future__ import annotations

import json


def echo(prompt: str) -> str:
    """An agent that answers with its prompt."""
    return f"You asked: {prompt}"


def judge(prompt: str) -> str:
    """final_response_match_v2's answer: valid when the judged answer carries JUDGE:PASS."""
    answer = prompt.split("# Your answer")[0]
    if "JUDGE:PASS" not in answer and "JUDGE:FAIL" not in answer:
        return "no verdict marker in this prompt"  # a judge failure of the row, as an unreadable answer is
    valid = "JUDGE:PASS" in answer
    return json.dumps({"reasoning": "read the marker", "verdict": "valid" if valid else "invalid"})
