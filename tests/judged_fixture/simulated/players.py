"""The agent and the scripted user of the simulated fixture, named on the command line as module:attr."""

from __future__ import annotations

from levelfield.testing import ScriptedUser


def agent(prompt: str) -> str:
    """A home agent that answers in the user's language."""
    if "device_1" in prompt:
        return "device_1 ist jetzt an."
    if "device_3" in prompt:
        return "device_3 已关闭。"
    return "Gern geschehen."


# The German user thanks once and ends; the Chinese user ends after the answer.
user = ScriptedUser([("ist jetzt an", "Danke!"), ("Gern geschehen", None), ("已关闭", None)])
