"""The HTTP side A2AAgent and the A2A preflight share: checked headers, credentials split from a URL,
and what a failed connection was (refused, DNS, TLS, timeout), said with what to check."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

from ..._core.data.types import AgentOutput
from ..._core.errors import AdapterError, ConfigError, ConfigTypeError, TransientAgentError

__all__: list[str] = []  # private helpers of the A2A modules


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _transient(message: str, error_type: str, partial: AgentOutput | None) -> TransientAgentError:
    exc = TransientAgentError(message, error_type=error_type, partial=partial)
    exc.transient = True  # type: ignore[attr-defined]  # the runner retries errors marked so
    return exc


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_UNSAFE_VALUE = re.compile(r"[\x00-\x1f\x7f]")


def _checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` as a dict, each checked; an error names the header, never its value."""
    checked: dict[str, str] = {}
    for key, value in (headers or {}).items():
        if not isinstance(key, str) or not _HEADER_NAME.fullmatch(key):
            raise ConfigError(f"A2AAgent(headers=...): {key!r} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise ConfigTypeError(
                f"A2AAgent(headers=...): the value of {key!r} is a {type(value).__name__}, expected a string"
            )
        if _UNSAFE_VALUE.search(value) or value != value.strip():
            # A token read from a file often ends in a newline; saying so beats sending it.
            raise ConfigError(
                f"A2AAgent(headers=...): the value of {key!r} has a line break, a control character or "
                "surrounding whitespace (value not shown); strip it, e.g. token.strip()"
            )
        if not value.isascii():
            # httpx sends header values as ASCII: say so now rather than fail every run.
            raise ConfigError(
                f"A2AAgent(headers=...): the value of {key!r} has non-ASCII characters (value not shown); HTTP "
                "header values are ASCII: percent-encode or base64-encode it"
            )
        checked[key] = value
    return checked


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None, list[tuple[str, str]]]:
    """(the URL without credentials or query, basic-auth user and password, query parameters)."""
    parts = urllib.parse.urlsplit(url)
    auth = None
    if parts.username is not None or parts.password is not None:
        auth = (urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or ""))
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    clean = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
    return clean, auth, params


def _connection_error(
    where: str, url: str, timeout: float | None, chain: list[BaseException], partial: AgentOutput | None
) -> AdapterError:
    """What a failed connection was (refused, DNS, TLS, timeout) and what to check, from the exceptions
    below httpx's ConnectError: the innermost exception is often noise from closing the connection."""
    import socket
    import ssl

    import httpx

    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)

    def find(kind: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException | None:
        return next((e for e in chain if isinstance(e, kind)), None)

    if (tls := find(ssl.SSLError)) is not None:
        reason = getattr(tls, "reason", None) or str(tls)
        return AdapterError(
            f"{where}: the TLS handshake failed ({reason}); check the scheme (https:// for a TLS server, http:// "
            "otherwise) and that the server's certificate is valid and trusted (SSL_CERT_FILE)",
            error_type="tls_error",
            partial=partial,
        )
    if (dns := find(socket.gaierror)) is not None:
        return _transient(
            f"{where}: the host name {host!r} could not be resolved ({dns.strerror or dns}); check the URL's "
            "spelling and this machine's network and DNS",
            "dns_error",
            partial,
        )
    if find(ConnectionRefusedError) is not None:
        return _transient(
            f"{where}: connection refused: is the server running at {url}? (nothing accepts connections on "
            f"{host}:{port})",
            "connection_refused",
            partial,
        )
    if find((httpx.ConnectTimeout, TimeoutError)) is not None:
        return _transient(
            f"{where}: no connection within {timeout} s; check that {host}:{port} is reachable from here (the host "
            "is up, no firewall or proxy drops the connection)",
            "connect_timeout",
            partial,
        )
    cause = next((e for e in chain if isinstance(e, OSError) and e.errno is not None), None) or find(OSError)
    said = f"{type(cause).__name__}: {cause}" if cause is not None else _innermost(chain)
    return _transient(f"{where}: cannot connect ({said}); check the URL and that the server is up", "connection_error", partial)


def _innermost(chain: list[BaseException]) -> str:
    last = chain[-1]
    return f"{type(last).__name__}: {last}" if str(last) else type(last).__name__
