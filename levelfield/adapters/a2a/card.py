"""The A2A preflight's first step: the agent card read from its well-known path and checked
against the specification (required fields, interfaces, protocol versions, capabilities)."""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from .checks import CARD_PATHS, S_CAPABILITIES, S_CARD, S_DISCOVERY, S_INTERFACES

if TYPE_CHECKING:
    from .probes import _Prober

__all__: list[str] = []  # private to the preflight: _read_card, _check_card


_REQUIRED = ("name", "description", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills")


async def _read_card(http: Any, base: str, checks: _Prober) -> dict[str, Any] | None:
    """The card as JSON; each path read within the preflight's timeout as a whole and under the size cap
    (a ``CardReadError`` naming the URL and the bound otherwise)."""
    from .bounded import too_large, too_slow, within
    from .http import ResponseTooLarge, _chain

    tried: list[str] = []
    for path in CARD_PATHS:
        try:
            response = await within(checks.timeout, http.get(f"{base}{path}"))
        except (asyncio.TimeoutError, TimeoutError):
            raise too_slow(f"{base}{path}", checks.timeout) from None
        except Exception as exc:
            cause = next((e for e in _chain(exc) if isinstance(e, ResponseTooLarge)), None)
            if cause is None:
                raise
            raise too_large(f"{base}{path}", cause) from None
        checks._note("card", response)
        if response.status_code == 200:
            try:
                card = response.json()
            except ValueError:
                checks.add("card.fetch", "fail", S_DISCOVERY, f"{path} is not JSON")
                return None
            if not isinstance(card, dict):
                checks.add("card.fetch", "fail", S_DISCOVERY, f"{path} holds a {type(card).__name__}, not an object")
                return None
            if path != CARD_PATHS[0]:
                checks.add("card.fetch", "warn", S_DISCOVERY, f"the card is only at the old path {path}")
            else:
                checks.add("card.fetch", "pass", S_DISCOVERY, f"read from {path}")
            return card
        tried.append(f"{path}: HTTP {response.status_code}")
    checks.add("card.fetch", "fail", S_DISCOVERY, f"no agent card at either path ({'; '.join(tried)})")
    return None


def _check_card(card: dict[str, Any], p: _Prober) -> tuple[list[tuple[str, str, str]], bool]:
    """The card's checks; returns its JSON-RPC interfaces as (version, url, binding) and whether it claims streaming."""
    missing = [k for k in _REQUIRED if k not in card]
    if "supportedInterfaces" not in card and "url" not in card:
        missing.append("supportedInterfaces (1.0) or url (0.3)")
    empty = [k for k in ("name", "description", "version") if k in card and not (isinstance(card[k], str) and card[k].strip())]
    if missing or empty:
        said = "; ".join(x for x in (f"missing {', '.join(missing)}" if missing else "",
                                     f"empty or not a string: {', '.join(empty)}" if empty else "") if x)
        p.add("card.required_fields", "fail", S_CARD, said)
    else:
        p.add("card.required_fields", "pass", S_CARD, "name, description, version, capabilities, modes, skills, interfaces")
    if "skills" in card and not isinstance(card["skills"], list):
        p.add("card.skills", "fail", S_CARD, "skills is not a list")

    from a2a.client.card_resolver import parse_agent_card

    try:
        parsed = parse_agent_card(copy.deepcopy(card))
    except Exception as exc:  # the SDK's own reading of the card
        p.add("card.schema", "fail", S_CARD, f"a2a-sdk cannot read the card: {str(exc).splitlines()[0][:200]}")
        return [], False
    interfaces = [(i.protocol_version, i.url, i.protocol_binding) for i in parsed.supported_interfaces]
    if not interfaces:
        p.add("card.interfaces", "fail", S_INTERFACES, "the card declares no interface (supportedInterfaces / url)")
        return [], False
    bad_url = [u for _, u, _ in interfaces if not u.startswith(("http://", "https://"))]
    no_version = [b for ver, _, b in interfaces if not ver]
    spoken = [(ver, u, b) for ver, u, b in interfaces
              if b in ("JSONRPC", "HTTP+JSON") and (ver.startswith("0.3") or ver.startswith("1."))]
    if bad_url:
        p.add("card.interfaces", "fail", S_INTERFACES, f"an interface URL is not an absolute http(s) URL: {bad_url[0]!r}")
    elif no_version and "supportedInterfaces" in card:
        p.add("card.interfaces", "fail", S_INTERFACES, f"an interface ({no_version[0]}) has no protocolVersion")
    elif not spoken:
        offered = ", ".join(f"{b} {ver or '?'}" for ver, _, b in interfaces)
        p.add("card.interfaces", "fail", S_INTERFACES, f"no interface levelfield speaks (JSON-RPC or HTTP+JSON, 0.3 or 1.x); "
              f"offered: {offered}")
    else:
        p.add("card.interfaces", "pass", S_INTERFACES, ", ".join(f"{b} {ver}" for ver, _, b in interfaces))
    versions = sorted({ver for ver, _, _ in interfaces if ver})
    unknown = [ver for ver in versions if not (ver.startswith("0.3") or ver.startswith("1."))]
    if unknown:
        p.add("card.protocol_version", "warn", S_INTERFACES, f"protocol version(s) {', '.join(unknown)} are not 0.3 or 1.x")
    else:
        p.add("card.protocol_version", "pass", S_INTERFACES, ", ".join(versions) or "0.3 (the 0.3 default)")
    capabilities = card.get("capabilities")
    streaming = False
    if not isinstance(capabilities, dict):
        p.add("card.capabilities", "fail", S_CAPABILITIES, "capabilities is not an object")
    elif "streaming" in capabilities and not isinstance(capabilities["streaming"], bool):
        p.add("card.capabilities", "fail", S_CAPABILITIES,
              f"capabilities.streaming is {capabilities['streaming']!r}, not a boolean")
    else:
        streaming = capabilities.get("streaming") is True
        p.add("card.capabilities", "pass", S_CAPABILITIES, f"streaming {'claimed' if streaming else 'not claimed'}")
    rpc = [(("0.3" if ver.startswith("0.3") else "1.0"), u, b) for ver, u, b in spoken if b == "JSONRPC"]
    if spoken and not rpc:
        p.add("probes", "warn", S_INTERFACES, "the card offers only HTTP+JSON; the preflight probes the JSON-RPC binding, "
              "so only the card was checked")
    return rpc, streaming
