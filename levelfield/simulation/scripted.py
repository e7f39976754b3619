"""``ScriptedUser``: a deterministic simulated user for offline tests, decided by rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Union

from .._core.data.dataset import Scenario
from .._core.errors import ConfigError, ConfigTypeError
from .._core.run.conversation import DEFAULT_MAX_TURNS, Exchange, UserTurn

__all__ = ["ScriptedUser", "Rule", "Reply"]

Reply = Union[str, None, UserTurn]  # noqa: UP007 (a runtime alias, kept readable beside None)
"""What the user does: say a text, end the conversation (None), or a full :class:`UserTurn`."""

Rule = tuple[Union[str, "re.Pattern[str]", Callable[[str], bool]], Reply]
"""``(when, reply)``: ``when`` is a text the agent's last message contains (case-insensitive), a
regular expression it matches, or a predicate on it."""

Policy = Callable[[str, Scenario, Sequence[Exchange]], Reply]
"""``policy(agent_last_message, scenario, transcript) -> reply``: the user's whole behaviour."""


def _check_rule(index: int, rule: Any) -> tuple[Any, Reply]:
    try:
        when, reply = rule
    except (TypeError, ValueError):
        raise ConfigTypeError(f"ScriptedUser rule {index}: expected a (when, reply) pair, got {rule!r}") from None
    if not isinstance(when, (str, re.Pattern)) and not callable(when):
        raise ConfigTypeError(
            f"ScriptedUser rule {index}: 'when' must be a text, a compiled regex or a predicate on the agent's message, got {when!r}"
        )
    if reply is not None and not isinstance(reply, (str, UserTurn)):
        raise ConfigTypeError(f"ScriptedUser rule {index}: the reply must be a text, None (end) or a UserTurn, got {reply!r}")
    return when, reply


class ScriptedUser:
    """A simulated user whose every turn is decided by rules on the agent's last message.

    The first rule whose ``when`` matches gives the reply; with none, ``default`` (None: the user
    ends the conversation). Or pass one ``policy(agent_message, scenario, transcript)`` callable.
    No model, no randomness: the same agent answers give the same user turns::

        user = ScriptedUser([("which city", "Paris, please."), ("booked", None)], default="Go on.")
    """

    def __init__(
        self,
        rules: Sequence[Rule] | Policy,
        *,
        default: Reply = None,
        max_turns: int = DEFAULT_MAX_TURNS,
    ) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError(f"ScriptedUser(max_turns={max_turns!r}): must be a whole number >= 1")
        if default is not None and not isinstance(default, (str, UserTurn)):
            raise ConfigTypeError(f"ScriptedUser(default={default!r}): must be a text, None (end) or a UserTurn")
        self.policy: Policy | None = None
        self.rules: list[tuple[Any, Reply]] = []
        if callable(rules):
            self.policy = rules
        elif isinstance(rules, Sequence) and not isinstance(rules, str):
            self.rules = [_check_rule(i, r) for i, r in enumerate(rules)]
        else:
            raise ConfigTypeError(f"ScriptedUser: expected a list of (when, reply) rules or a policy callable, got {rules!r}")
        self.default = default
        self.max_turns = max_turns

    def __repr__(self) -> str:
        return f"ScriptedUser({len(self.rules)} rules, max_turns={self.max_turns})"

    def reply(self, message: str, scenario: Scenario, transcript: Sequence[Exchange]) -> Reply:
        """The user's reply to the agent's ``message``, by the policy or the first matching rule."""
        if self.policy is not None:
            return self.policy(message, scenario, transcript)
        for when, reply in self.rules:
            if isinstance(when, str):
                hit = when.casefold() in message.casefold()
            elif isinstance(when, re.Pattern):
                hit = when.search(message) is not None
            else:
                hit = bool(when(message))
            if hit:
                return reply
        return self.default

    async def next_turn(self, scenario: Scenario, transcript: Sequence[Exchange]) -> UserTurn:
        message = transcript[-1].agent.response if transcript else ""
        reply = self.reply(message, scenario, transcript)
        if isinstance(reply, UserTurn):
            return reply
        if reply is None or isinstance(reply, str):
            return UserTurn(reply)
        raise ConfigTypeError(f"ScriptedUser policy returned {reply!r}; expected a text, None (end) or a UserTurn")
