"""The HTTP side of A2A: checked headers, credentials split from a URL, every answer read under the
response size cap, and what a failed exchange was (refused, DNS, TLS, a timeout, an HTTP status, an
A2A error), said with what to check; A2AAgent and the A2A preflight share it."""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from ..._core.data.types import AgentOutput
from ..._core.errors import AdapterError, ConfigError, ConfigTypeError, RateLimitedError, TransientAgentError
from ..._core.run import budget
from ..._core.run.failures import parse_retry_after

__all__ = ["ResponseTooLarge"]  # and private helpers of the A2A modules

_MAX_SERVER_RETRIES = 5
"""How many times one run follows a server's ``Retry-After`` before giving the failure to the runner."""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _transient(message: str, error_type: str, partial: AgentOutput | None) -> TransientAgentError:
    exc = TransientAgentError(message, error_type=error_type, partial=partial)
    exc.transient = True  # the runner retries errors marked so
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
            f"{where}: the host name {host!r} could not be resolved ({getattr(dns, 'strerror', None) or dns}); check the URL's "
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


class ResponseTooLarge(Exception):
    """An answer larger than the run's ``max_response_bytes``: its read was stopped there."""

    def __init__(self, cap: int, size: int | None = None) -> None:
        self.cap = cap
        self.size = size
        """The size the server announced (Content-Length), when it did."""
        said = f" (it announced {_size(size)})" if size is not None else ""
        super().__init__(f"the answer is larger than {_size(cap)}{said}")


def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


@functools.cache
def _capped_stream_class() -> type:
    import httpx

    class CappedStream(httpx.SyncByteStream, httpx.AsyncByteStream):
        """A response body that stops with ResponseTooLarge once more than ``cap`` bytes came in."""

        def __init__(self, stream: Any, cap: int) -> None:
            self._stream = stream
            self._cap = cap
            self._seen = 0

        def _count(self, chunk: bytes) -> bytes:
            self._seen += len(chunk)
            if self._seen > self._cap:
                raise ResponseTooLarge(self._cap)
            return chunk

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._stream:
                yield self._count(chunk)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._stream:
                yield self._count(chunk)

        def close(self) -> None:
            self._stream.close()

        async def aclose(self) -> None:
            await self._stream.aclose()

    return CappedStream


def _cap_response(response: Any) -> None:
    """httpx response hook: the body is read under the run's cap (one announced larger is refused unread)."""
    cap = budget.max_response_bytes()
    if cap is None:
        return
    announced = response.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > cap:
        raise ResponseTooLarge(cap, int(announced))
    response.stream = _capped_stream_class()(response.stream, cap)


async def _acap_response(response: Any) -> None:
    _cap_response(response)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds a 429/503 answer asked the client to wait (``Retry-After``), if it did."""
    import httpx

    for e in _chain(exc):
        if isinstance(e, httpx.HTTPStatusError) and e.response.status_code in (429, 503):
            return parse_retry_after(e.response.headers.get("retry-after"))
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _rest_error(text: str) -> tuple[str, str] | None:
    """(error type, message) of a REST error payload ``{"error": {"status", "message"}}`` in ``text``."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        payload = json.loads(text[start:])
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("status"), str):
        return None
    status = error["status"].lower()
    return (status if status.endswith("error") else f"{status}_error"), str(error.get("message", ""))


def _raised_in_sdk(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside a2a-sdk or protobuf code (reading an answer), not ours."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and any(f"{sep}{pkg}{sep}" in last for pkg in ("a2a", "protobuf") for sep in "/\\")


def _exchange_error(exc: Exception, *, where: str, url: str, timeout: float | None, progress: str,
                    partial: AgentOutput | None, redact: Callable[[str], str], retry_after: float | None,
                    left: float | None) -> AdapterError:
    """The AdapterError a failed exchange of an A2A agent (``where``) is: its cause read from the
    exception chain (the size cap, a connection, a timeout, an HTTP status, an A2A error).
    ``progress`` says what had arrived, ``partial`` is it; ``redact`` hides credentials in a body quoted."""
    import httpx
    from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
    from a2a.utils.errors import A2AError

    chain = _chain(exc)
    too_large = next((e for e in chain if isinstance(e, ResponseTooLarge)), None)
    if too_large is not None:
        return AdapterError(
            f"{where}: {too_large}{progress}; the read was stopped there. Raise the cap with "
            "RunConfig(max_response_bytes=...) or --max-response if such answers are expected",
            error_type="response_too_large",
            partial=partial,
        )
    status = getattr(exc, "status_code", None)
    body = ""
    for e in chain:
        if isinstance(e, httpx.HTTPStatusError):
            status = e.response.status_code
            try:
                # Redact before cutting: a cut could leave half a secret no longer matched.
                body = redact(e.response.text.strip())[:300]
            except Exception:  # a streamed body that was never read
                body = ""
    detail = f": {body}" if body else ""
    if any(isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout)) for e in chain):
        return _connection_error(where, url, timeout, chain, partial)
    if any(isinstance(e, (A2AClientTimeoutError, httpx.TimeoutException)) for e in chain):
        return AdapterError(
            f"{where}: no answer within {timeout} s{progress}; the server took the request but did "
            "not answer in time: is it overloaded or stuck? (A2AAgent(timeout=...) sets the wait)",
            error_type="timeout",
            partial=partial,
        )
    if any(isinstance(e, (httpx.RemoteProtocolError, httpx.NetworkError)) for e in chain):
        return _transient(
            f"{where}: the connection broke before the answer was complete{progress} ({_innermost(chain)})",
            "connection_lost",
            partial,
        )
    if status in (429, 503) and retry_after is not None and left is not None and retry_after >= left:
        # Not transient: a retry sooner than the server asked would only be refused again.
        return AdapterError(
            f"{where}: HTTP {status}, the server asked to retry after {retry_after:g} s, more than the "
            f"{max(left, 0):.1f} s left of the run's timeout (A2AAgent(timeout={timeout}), "
            f"RunConfig(timeout=...)); the run ends here{detail}",
            error_type="rate_limited",
            partial=partial,
        )
    if status in (429, 503):
        asked = ""
        if retry_after is not None and not budget.absorbs_rate_limits():
            asked = f"; it asked to retry after {retry_after:g} s and was still busy after {_MAX_SERVER_RETRIES} retries"
        elif retry_after is not None:
            asked = f"; it asked to retry after {retry_after:g} s"
        return RateLimitedError(
            f"{where}: HTTP {status}, the server is busy or limits the rate of requests{asked}{detail}",
            retry_after=retry_after, error_type=f"http_{status}", partial=partial,
        )
    if status in (502, 504):
        return _transient(
            f"{where}: HTTP {status}, the server is busy or unavailable{detail}", f"http_{status}", partial
        )
    if status in (401, 403):
        return AdapterError(
            f"{where}: HTTP {status}, the server refused the request; pass credentials with "
            "A2AAgent(..., headers={'Authorization': 'Bearer ...'})",
            error_type="unauthorized",
            partial=partial,
        )
    if isinstance(exc, AgentCardResolutionError):
        return AdapterError(
            f"{where}: cannot read its agent card ({exc.message})", error_type="bad_card", partial=partial
        )
    if status is not None:
        return AdapterError(f"{where}: HTTP {status}{detail}", error_type="http_error", partial=partial)
    if isinstance(exc, A2AError):
        name = type(exc).__name__
        if name == "A2AClientError":
            remote = _rest_error(exc.message)
            if remote is not None:  # an error event inside a REST stream
                return AdapterError(
                    f"{where}: the server answered with an A2A error ({remote[0]}): {remote[1]}",
                    error_type=remote[0],
                    partial=partial,
                )
            return AdapterError(f"{where}: {exc.message}", error_type="a2a_client_error", partial=partial)
        return AdapterError(
            f"{where}: the server answered with an A2A error ({name}): {exc.message}",
            error_type=_snake(name),
            partial=partial,
        )
    if _raised_in_sdk(exc):
        # The SDK could not read the answer: e.g. a JSON-RPC reply whose "result" is null.
        return AdapterError(
            f"{where}: the answer is not a valid A2A response (a null or malformed result"
            f"{progress}): {type(exc).__name__}: {exc}",
            error_type="bad_response",
            partial=partial,
        )
    return AdapterError(f"{where}: {type(exc).__name__}: {exc}", error_type=type(exc).__name__, partial=partial)

