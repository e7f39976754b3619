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
        f"{what} at {url}: no complete answer within {seconds:g} s (a deadline for the whole answer, however slowly "
        "it arrives); the server did not answer in time: is it stuck? Raise --timeout (or A2AAgent(card_timeout=...)) "
        "if it is only slow",
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
    response hook caps the bytes) within ``seconds`` for the whole answer (None: the caller's deadline bounds
    it, as a run's does). What cannot be read is said as a2a-sdk's own card resolver says it
    (``AgentCardResolutionError``); a bound passed is a :class:`CardReadError` naming the URL and the bound."""
    import json

    import httpx
    from a2a.client.card_resolver import parse_agent_card
    from a2a.client.errors import AgentCardResolutionError
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from google.protobuf.json_format import ParseError

    url = f"{base}{AGENT_CARD_WELL_KNOWN_PATH}"
    try:
        response = await within(seconds, http.get(url))
        response.raise_for_status()
        return parse_agent_card(response.json())
    except (asyncio.TimeoutError, TimeoutError):
        if seconds is None:
            raise
        raise too_slow(url, seconds) from None
    except httpx.HTTPStatusError as exc:
        raise AgentCardResolutionError(f"Failed to fetch agent card from {url} (HTTP {exc.response.status_code}): "
                                       f"{exc}", status_code=exc.response.status_code) from exc
    except json.JSONDecodeError as exc:
        raise AgentCardResolutionError(f"Failed to parse JSON for agent card from {url}: {exc}") from exc
    except ParseError as exc:
        raise AgentCardResolutionError(f"Failed to validate agent card structure from {url}: {exc}") from exc
    except httpx.RequestError as exc:
        raise AgentCardResolutionError(f"Network communication error fetching agent card from {url}: {exc}") from exc
    except Exception as exc:
        cause = next((e for e in _chain(exc) if isinstance(e, ResponseTooLarge)), None)
        if cause is None:
            raise
        raise too_large(url, cause) from None
