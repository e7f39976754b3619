"""The OTLP/HTTP receiver: ``POST /v1/traces`` in protobuf or JSON, as OpenTelemetry exporters send it.

Answers follow the OTLP/HTTP specification: 200 with an ``ExportTraceServiceResponse`` (and
``partial_success`` naming spans that could not be read); 400 for a body that is no OTLP request
(the watcher goes on); 401 without the bearer token when one is required; 413 for a body over the
limit, as sent or once inflated (gzip and deflate are inflated no further than the limit); 415 for
another content type; and 503 with ``Retry-After`` when the watcher's queue is full, which exporters
retry (OpenTelemetry's Python exporter retries 5xx but not 429). The reply is sent only after the
request's spans are in the spool.
"""

from __future__ import annotations

import gzip
import hmac
import zlib
from typing import Any

from .._core.errors import TraceError, WriteError

__all__ = ["make_app", "decode"]

_KINDS = {"application/x-protobuf": 0, "application/protobuf": 0, "application/json": 1}


def decode(kind: int, body: bytes, keep: frozenset[str] = frozenset()) -> list[Any]:
    """The spans (and unreadable-span errors) of a request body; :class:`TraceError` for no OTLP request at all.
    ``keep``: attribute keys kept on the spans (what the sampling rules match)."""
    if kind == 0:
        from ..formats.otlp_proto import spans_from_protobuf

        return spans_from_protobuf(body, keep=keep)
    from ..formats.otel import spans_from_otlp
    from ..formats.spans import json_loads

    try:
        data = json_loads(body)
    except ValueError as exc:
        raise TraceError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not ("resourceSpans" in data or "resource_spans" in data):
        raise TraceError("not an OTLP JSON export: expected an object with 'resourceSpans'")
    return list(spans_from_otlp(data, keep=keep))


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    """``body`` decompressed, never more than ``limit`` bytes of it held: a small request may inflate
    to gigabytes (a "zip bomb"), so the output is bounded as it is produced (OverflowError beyond)."""
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit:
        raise OverflowError
    if not inflater.eof:
        raise TraceError("the compressed body ends before its compressed stream does")
    return out


def _unpack(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding in ("gzip", "x-gzip"):
        return _inflate(body, 16 + zlib.MAX_WBITS, limit)
    if encoding == "deflate":  # HTTP's deflate is the zlib format (RFC 9110 8.4.1.2)
        return _inflate(body, zlib.MAX_WBITS, limit)
    raise TraceError(f"Content-Encoding {encoding!r} is not supported (use gzip, deflate or none)")


async def _read_body(request: Any, limit: int) -> bytes:
    """The request's body as sent, read no further than ``limit`` bytes (OverflowError beyond)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise OverflowError
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise OverflowError
        chunks.append(chunk)
    return b"".join(chunks)


def make_app(watcher: Any) -> Any:
    """The Starlette app serving ``/v1/traces`` for ``watcher``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from ..formats.otlp_proto import export_response

    token = watcher.auth_token

    async def traces(request: Request) -> Response:
        stats = watcher.stats
        stats.requests += 1
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                stats.unauthorized += 1
                return PlainTextResponse("missing or wrong bearer token", status_code=401)
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = _KINDS.get(ctype)
        if kind is None:
            stats.bad_requests += 1
            return PlainTextResponse(
                f"Content-Type {ctype or '(none)'!r}: send application/x-protobuf or application/json", status_code=415)
        try:
            body = await _read_body(request, watcher.max_body)
            body = _unpack(body, request.headers.get("content-encoding", "").strip().lower(), watcher.max_body)
            if len(body) > watcher.max_body:
                raise OverflowError
            spans = decode(kind, body, watcher.sampler.keys)
        except OverflowError:
            stats.bad_requests += 1
            return PlainTextResponse(f"request body over {watcher.max_body} bytes", status_code=413)
        except (TraceError, zlib.error, gzip.BadGzipFile, EOFError) as exc:
            stats.bad_requests += 1
            return PlainTextResponse(f"bad OTLP request: {exc}", status_code=400)
        try:
            rejected, why = await watcher.accept(kind, body, spans)
        except WriteError as exc:
            return PlainTextResponse(f"cannot spool the request: {exc}", status_code=503, headers={"Retry-After": "5"})
        if rejected is None:  # the queue is full: shed, ask to come back
            return PlainTextResponse("levelfield watch is behind; retry later", status_code=503,
                                     headers={"Retry-After": str(watcher.retry_after)})
        return Response(export_response(rejected, why, json=kind == 1), media_type=ctype)

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/healthz", health)])
