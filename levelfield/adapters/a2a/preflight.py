"""Does a remote agent speak A2A? A conformance preflight, run before judging it.

``preflight(url)`` reads the agent card, then sends a few probe messages over each JSON-RPC
interface the card offers (A2A 1.0 and 0.3) and checks what the specification requires of the
answers: the card's required fields and interfaces, task states and their order, a final state
reached, message and part shapes, streaming when the card claims it, ``GetTask``, cancelling,
JSON-RPC error codes for bad requests, ``Retry-After`` on 429/503, and how the agent exposes its
tool calls (ADK-marked data parts, plain data parts, none). The result is a :class:`Preflight`:
a table of :class:`Check` rows, each pass / warn / fail / skip with the spec section it comes from.

Sections are cited as the A2A 0.3 specification numbers them (``§7.2 message/stream``); the
1.0 names (``SendStreamingMessage``) are the same methods. Probes go over raw HTTP, so what is
checked is what the server sent, not what a client library made of it; answers are validated
with a2a-sdk's own types (the 1.0 protobuf messages, the 0.3 pydantic models).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._core.errors import AdapterError
from ..._core.run.failures import parse_retry_after
from .answers import _tool_calls_in
from .card import _check_card, _read_card
from .checks import DEFAULT_PROMPT, S_RETRY, S_SEND, S_TOOLS, STATUSES, TOOL_CALLS, Check, Preflight
from .probes import _Prober
from .traffic import NO_TOOLS

__all__ = ["Check", "Preflight", "preflight", "apreflight", "declares_tools", "STATUSES", "DEFAULT_PROMPT", "TOOL_CALLS"]


PASSIVE = ("no probe message sent (each is a task the agent runs): the evaluation's own answers are checked as "
           "they arrive; a2a_probe=True / --a2a-probe, or `levelfield a2a-check URL`, sends probes")


def declares_tools(card: Mapping[str, Any]) -> bool:
    """Whether an agent card (as JSON) declares tools: a skill tagged ``tools`` (how ADK's card builder
    lists an agent's tools; the A2A spec has no field for them)."""
    skills = card.get("skills")
    return isinstance(skills, list) and any(
        isinstance(skill, Mapping) and isinstance(skill.get("tags"), list) and "tools" in skill["tags"] for skill in skills)


# -- entry points -------------------------------------------------------------------------------------


_DEFAULT: Any = object()


async def apreflight(url: str, *, headers: Mapping[str, str] | None = None, prompt: str = DEFAULT_PROMPT,
                     timeout: float = 30.0, max_response_bytes: int | None = _DEFAULT) -> Preflight:
    """Check the A2A agent at ``url``: its card, then probes over each JSON-RPC version it offers.

    Args:
        url: the agent's base URL (its card is read from ``/.well-known/agent-card.json``).
        headers: sent with every request (e.g. ``{"Authorization": "Bearer ..."}``).
        prompt: what the probe messages say (an evaluation sends its first case's prompt, so the
            tool-call check sees the tools the cases use).
        timeout: seconds each request may take as a whole (the agent card too, however slowly it
            arrives), and how long a task answered as still running is polled for a final state.
        max_response_bytes: the largest answer read (the card, each probe's); default the
            ``RunConfig`` default, 32 MB. None: no cap.

    Raises:
        AdapterError: the card could not be requested at all (refused, TLS, DNS, timeout) or read within
            its bounds (too slow as a whole, too large); the message says which and what to check.
    """
    from ..._core.run import budget
    from .http import _checked_headers, _split_credentials

    base, auth, params = _split_credentials(url)
    token = budget.set_response_cap(max_response_bytes) if max_response_bytes is not _DEFAULT else None
    try:
        return await _run(base, _checked_headers(headers), auth, params, prompt, timeout)
    finally:
        if token is not None:
            budget.reset_response_cap(token)


async def _run(base: str, checked: Mapping[str, str], auth: tuple[str, str] | None, params: list[tuple[str, str]],
               prompt: str, timeout: float, every_version: bool = True, probe_messages: bool = True) -> Preflight:
    """The preflight; ``every_version=False`` probes only the card's first JSON-RPC version (the one a
    client picks), so a probing check costs the agent two answers, not four. ``probe_messages=False``
    reads and checks the card only and sends no message (an evaluation's passive preflight: its own
    answers are checked as they arrive, see :mod:`levelfield.adapters.a2a.traffic`)."""
    import httpx

    from .http import _acap_response, _chain, _connection_error

    # Every answer read under the size cap (RunConfig.max_response_bytes, 32 MB by default); each read
    # also under ``timeout`` as a whole (bounded.within), which httpx's per-read timeout is not.
    async with httpx.AsyncClient(headers={"Accept-Encoding": "identity", **checked}, params=params,
                                 auth=httpx.BasicAuth(*auth) if auth else None, timeout=httpx.Timeout(timeout),
                                 event_hooks={"response": [_acap_response]}) as http:
        probe = _Prober(http, base, timeout, prompt)
        try:
            card = await _read_card(http, base, probe)
        except httpx.TimeoutException as exc:
            raise AdapterError(f"A2A preflight of {base}: no answer to the card request within {timeout:g} s",
                               error_type="timeout") from exc
        except httpx.HTTPError as exc:
            raise _connection_error(f"A2A preflight of {base}", base, timeout, _chain(exc), None) from exc
        result = Preflight(url=base)
        if card is not None:
            result.agent = card.get("name") if isinstance(card.get("name"), str) else None
            interfaces, streaming = _check_card(card, probe)
            if not probe_messages:
                probe.add("probes", "skip", S_SEND, PASSIVE)
                interfaces = []
            seen: set[str] = set()
            for version, iface_url, _ in interfaces:
                if version in seen or (seen and not every_version):
                    continue
                seen.add(version)
                probe.url = iface_url
                result.versions.append(version)
                await probe.probe(version, streaming)
        if not probe_messages:
            result.checks = probe.checks
            return result
        if probe.busy:
            missing = [(what, status) for what, status, after in probe.busy if parse_retry_after(after) is None]
            if missing:
                what, status = missing[0]
                probe.add("retry_after", "fail", S_RETRY, f"HTTP {status} to {what} without a usable Retry-After header: "
                          "a client cannot know when to try again")
            else:
                probe.add("retry_after", "pass", S_RETRY, f"{len(probe.busy)} busy answer(s), each with Retry-After")
        else:
            probe.add("retry_after", "skip", S_RETRY, "no 429 or 503 answer was seen during the preflight")
        if probe.read_any:
            result.tool_calls = _tool_calls_in(probe.parts)
            if result.tool_calls == "none" and card is not None and not declares_tools(card):
                probe.add("tool_calls", "skip", S_TOOLS, NO_TOOLS)
            else:
                status = {"adk": "pass", "data": "warn", "none": "warn"}[result.tool_calls]
                probe.add("tool_calls", status, S_TOOLS, TOOL_CALLS[result.tool_calls])
        else:
            probe.add("tool_calls", "skip", S_TOOLS, TOOL_CALLS["unknown"])
        result.checks = probe.checks
        return result


def preflight(url: str, *, headers: Mapping[str, str] | None = None, prompt: str = DEFAULT_PROMPT,
              timeout: float = 30.0, max_response_bytes: int | None = _DEFAULT) -> Preflight:
    """:func:`apreflight` from sync code (also inside a running event loop, e.g. Jupyter)."""
    from ..._core.run.threads import run_coroutine

    return run_coroutine(apreflight(url, headers=headers, prompt=prompt, timeout=timeout,
                                    max_response_bytes=max_response_bytes))
