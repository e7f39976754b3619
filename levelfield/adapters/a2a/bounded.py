"""Every read of a remote A2A server before a run, bounded twice: a total deadline and a size cap.

httpx's ``timeout`` bounds each wait for the next bytes, so a server that sends its agent card one
byte every 2 s is never timed out; and a card is read whole. Here each read (the agent card, each
preflight probe) has a deadline for the whole answer, however slowly it trickles, and stops at
``RunConfig.max_response_bytes`` (32 MB by default), like a run's answer. Failing either names the
URL and the bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..._core.errors import AdapterError
from .http import ResponseTooLarge, _chain

__all__: list[str] = []  # private to the A2A adapter: within, too_slow, too_large, CardReadError, read_card

T = TypeVar("T")

DEFAULT_CARD_SECONDS = 10.0
"""The card's deadline when neither the agent nor the run gives one."""


class CardReadError(AdapterError):
    """The agent card could not be read within its bounds (too slow as a whole, or too large).

    Kept by the agent: a card that did not arrive in time or was too large is not asked for again
    by each run of the same evaluation (each run fails with this message at once)."""


async def within(seconds: float | None, awaitable: Awaitable[T]) -> T:
    """``awaitable`` under a total deadline of ``seconds`` (None: none); raises ``TimeoutError``."""
    if seconds is None:
        return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def too_slow(url: str, seconds: float, what: str = "the agent card") -> CardReadError:
    return CardReadError(
        f"{what} at {url} was not read within {seconds:g} s (a deadline for the whole answer, however slowly it "
        "arrives): is the server stuck? Raise --timeout (or the agent's timeout=) if it is only slow",
        error_type="timeout",
    )


def too_large(url: str, exc: ResponseTooLarge, what: str = "the agent card") -> CardReadError:
    return CardReadError(
        f"{what} at {url}: {exc}; the read was stopped there. Raise the cap with --max-response or "
        "RunConfig(max_response_bytes=...) if such a card is expected",
        error_type="response_too_large",
    )


async def read_card(http: Any, base: str, seconds: float | None) -> Any:
    """The agent card at ``base`` (its well-known path) as a2a-sdk's ``AgentCard``, read by ``http`` (whose
    response hook caps the bytes) within ``seconds`` for the whole answer."""
    from a2a.client.card_resolver import parse_agent_card
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

    url = f"{base}{AGENT_CARD_WELL_KNOWN_PATH}"
    try:
        response = await within(seconds, http.get(url))
    except (asyncio.TimeoutError, TimeoutError):
        raise too_slow(url, seconds or 0.0) from None
    except Exception as exc:
        cause = next((e for e in _chain(exc) if isinstance(e, ResponseTooLarge)), None)
        if cause is None:
            raise
        raise too_large(url, cause) from None
    response.raise_for_status()
    return parse_agent_card(response.json())
