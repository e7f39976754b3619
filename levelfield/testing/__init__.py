"""Helpers for users' own offline tests: a scripted chat model, a scripted judge, a scripted user, and pytest gating on eval sets.

Names load lazily so that importing ``levelfield.testing`` does not import LangChain.
"""

from __future__ import annotations

__all__ = ["ScriptedChatModel", "ScriptedJudge", "JudgeQuestion", "ScriptedUser", "tool_outputs_by_turn", "last_human_text", "assert_eval", "check_eval",
           "eval_test", "ConcurrencyLimited", "FirstCallRefused", "QueuedAhead"]

from .._lazy import lazy_members

_LAZY = {
    "ScriptedChatModel": ".chat_model",
    "ScriptedJudge": ".judge",
    "JudgeQuestion": ".judge",
    "ScriptedUser": "..simulation.scripted",
    "tool_outputs_by_turn": ".chat_model",
    "last_human_text": ".chat_model",
    "assert_eval": ".gating",
    "check_eval": ".gating",
    "eval_test": ".gating",
    "ConcurrencyLimited": ".rate_limited",
    "FirstCallRefused": ".rate_limited",
    "QueuedAhead": ".rate_limited",
}


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
