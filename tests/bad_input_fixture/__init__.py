"""Agents of the bad-input suite (tests/test_bad_inputs.py) that note every call, so a row can show that
its bad input was refused before any agent ran."""

from __future__ import annotations

CALLS: list[str] = []
"""Every prompt any agent of this module was asked, in this process."""


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def agent(prompt: str, tools=[lookup]) -> str:  # noqa: B006 - a function agent's tools are its default
    """A function agent with one tool (levelled by tools=/faults=)."""
    CALLS.append(prompt)
    return "42"


def _short_metric():
    from levelfield.metrics import Metric

    class Short(Metric):
        """1 when the response has at most three words."""

        name = "short"
        requires = ("response",)

        def score(self, ctx):
            return float(len(ctx.response.split()) <= 3)

    return Short


Short = _short_metric()
"""A metric of one's own, for ``--metric tests.bad_input_fixture:Short``."""
