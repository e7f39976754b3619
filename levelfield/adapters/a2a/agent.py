"""A2A adapter: evaluate a remote agent that speaks the A2A protocol (a2a-sdk 1.x).

``A2AAgent(url_or_card)`` resolves the agent card, picks a transport the card offers (JSON-RPC
or HTTP+JSON), sends one message per turn and reads the event stream (or the final task when
streaming is off). Tool calls are read from data parts marked the way ADK marks them
(``metadata["adk_type"]`` = ``function_call`` / ``function_response``), each attributed to the
(sub-)agent the server names as the author; servers that mark calls differently plug in their
own ``trajectory_extractor``.

Credentials are sent but never recorded: the values of credential-bearing headers (named like
``Authorization``, ``X-API-Key``, ``Cookie``: see ``is_credential_name``), the URL's
``user:password@`` and its credential query values (``?token=...``) are replaced by ``***``
wherever a server could echo them (errors, answers, tool calls, the agent's name); other text is
never touched. Every answer is read under ``RunConfig.max_response_bytes``: a larger one fails
the run as ``response_too_large`` without being read whole.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import itertools
import json
import re
import time
import urllib.parse
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..._core.run import budget
from .failures import AGENT, CLASSES, TRANSPORT, classify
from .http import _chain, _checked_headers, _connection_error, _innermost, _split_credentials, _transient  # noqa: F401
from ..._core.run.failures import parse_retry_after
from ..._core.errors import AdapterError, ConfigError, ConfigTypeError, MissingExtraError, RateLimitedError
from ..._core.data.protocol import AgentRequest
from ..._core.data.token_counts import usage_from_counts
from ..._core.data.types import AgentOutput, Handoff, ToolCall, Usage

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types.a2a_pb2 import AgentCard, StreamResponse, Task

__all__ = [
    "A2AAgent",
    "TrajectoryExtractor",
    "adk_trajectory",
    "restore_ints",
    "ADK_TYPE_KEY",
    "FUNCTION_CALL",
    "FUNCTION_RESPONSE",
    "LEVELFIELD_KEY",
    "AUTHOR_KEYS",
    "ResponseTooLarge",
    "is_credential_name",
    "hide_url_credentials",
]

ADK_TYPE_KEY = "adk_type"
"""Part-metadata key ADK uses to say what a data part holds."""
FUNCTION_CALL = "function_call"
"""``adk_type`` of a tool call: data ``{name, args, id}``."""
FUNCTION_RESPONSE = "function_response"
"""``adk_type`` of a tool result: data ``{name, response, id}``."""
LEVELFIELD_KEY = "levelfield"
"""Metadata key levelfield's own client and server use to pass what A2A has no field for."""
TOOL_ERROR_KEY = "levelfield_tool_error"
"""Part-metadata key of a tool error (function_response parts of ``levelfield serve``)."""
ERROR_TYPE_KEY = "levelfield_error_type"
"""Status-message metadata key with the error type of a failed run (``levelfield serve``)."""
USAGE_KEY = "adk_usage_metadata"
"""Metadata key ADK uses for token counts."""
MODEL_KEY = "adk_model_version"
"""Metadata key naming the model that spent the tokens, when a server sends it."""
AUTHOR_KEYS = ("adk_author", "levelfield_agent", "agent_name", "author", "agent")
"""Metadata keys that name the (sub-)agent behind a part, message or artifact, most specific first:
ADK's ``adk_author``, levelfield's own, then the spellings other servers use."""

TrajectoryExtractor = Callable[[list[dict[str, Any]]], list[ToolCall]]
"""``fn(parts) -> trajectory``: every agent part of one turn, in order, as JSON dicts
(``{"text": ...}`` or ``{"data": ..., "metadata": {...}}``), whole floats already restored to ints."""

_POLL_SECONDS = 0.25
_MAX_SERVER_RETRIES = 5
"""How many times one run follows a server's ``Retry-After`` before giving the failure to the runner."""
_REDACTED = "***"
_timeout_scope = getattr(asyncio, "timeout", None)  # Python 3.11+


def _require_a2a() -> None:
    try:
        import a2a.client  # noqa: F401
        import httpx  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("a2a", "a2a-sdk", "A2AAgent") from exc


def restore_ints(value: Any) -> Any:
    """``value`` with every whole float turned back into an int, recursively.

    A2A data parts are protobuf ``Value``s, which store every number as a double, so ``23``
    arrives as ``23.0``. A genuine ``1.0`` comes back as ``1`` too; the matcher treats them alike.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: restore_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_ints(v) for v in value]
    return value


def _unwrap_result(response: Any) -> Any:
    # ADK wraps a tool's non-dict return value as {"result": value}; give back the value.
    if isinstance(response, dict) and set(response) == {"result"}:
        return response["result"]
    return response


def adk_trajectory(parts: list[dict[str, Any]]) -> list[ToolCall]:
    """The tool calls in ``parts`` marked the ADK way, outputs attached, deduplicated by call id.

    A ``function_response`` goes to the call with the same id, else to the earliest call of the
    same name still without an output; a response with no call at all is kept as a call.
    """
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    answered: set[int] = set()
    for part in parts:
        meta = part.get("metadata") or {}
        kind = meta.get(ADK_TYPE_KEY)
        data = part.get("data")
        if kind not in (FUNCTION_CALL, FUNCTION_RESPONSE) or not isinstance(data, dict) or not data.get("name"):
            continue
        call_id = data.get("id") or None
        if kind == FUNCTION_CALL:
            if call_id and call_id in by_id:
                continue  # the same call seen again (status update, then task history)
            args = data.get("args")
            call = ToolCall(
                tool_name=data["name"],
                tool_input=args if isinstance(args, dict) else {},
                id=call_id,
                agent=_author(meta),
            )
            calls.append(call)
            if call_id:
                by_id[call_id] = call
            continue
        target = by_id.get(call_id) if call_id else None
        if target is None:
            target = next(
                (c for c in calls if c.tool_name == data["name"] and id(c) not in answered and (not call_id or not c.id)),
                None,
            )
        if target is None:
            target = ToolCall(tool_name=data["name"], id=call_id)
            calls.append(target)
            if call_id:
                by_id[call_id] = target
        if id(target) in answered:
            continue  # a response seen twice
        answered.add(id(target))
        target.tool_output = _unwrap_result(data.get("response"))
        if meta.get(TOOL_ERROR_KEY):
            target.error = str(meta[TOOL_ERROR_KEY])
    return calls


def _author(meta: Mapping[str, Any]) -> str | None:
    for key in AUTHOR_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _usage_from(meta: Mapping[str, Any] | None) -> Usage | None:
    raw = (meta or {}).get(USAGE_KEY)
    if not isinstance(raw, dict):
        return None

    # The model: levelfield's server names it in the counts; ADK events carry ``model_version``.
    model = raw.get("model") or (meta or {}).get(MODEL_KEY) or (meta or {}).get("model_version")
    # Gemini's counts (ADK's ``usageMetadata``) or levelfield's own ``{input_tokens, cache_read_tokens, ...}``.
    usage = usage_from_counts(raw, str(model) if model else None) or Usage(model=str(model) if model else None)
    shares = raw.get("by_model")
    if isinstance(shares, dict):
        try:
            usage.by_model = {str(k): Usage.model_validate(v) for k, v in shares.items()}
        except ValueError:
            pass  # an unreadable breakdown leaves the tokens unattributed (unknown cost), not a failed run
    return usage


class _Turn:
    """Everything one turn's events said, deduplicated: messages by id, artifacts by id."""

    def __init__(self, extractor: TrajectoryExtractor) -> None:
        self.extractor = extractor
        # (kind, id) -> parts; insertion order is the order things were first seen.
        self.items: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
        self.artifact_usage: dict[str, Usage] = {}
        self.event_usage: Usage | None = None
        self.state: str | None = None
        self.status_text = ""
        self.status_meta: dict[str, Any] = {}
        self.task_id: str | None = None
        self.message_only = False
        self.answered = False
        """Whether the answer had a text part or a data part that is not a tool call (set by output())."""
        self.ended_running = False
        """The answer (a blocking send, or the stream) ended while the task was still submitted or working."""
        self.empty_parts = 0
        """Parts with no content at all (none of text, raw, url, data): a shape the spec does not allow."""
        self._anon = 0

    # -- reading events -------------------------------------------------------------------
    def add(self, event: StreamResponse) -> None:
        from google.protobuf.json_format import MessageToDict

        if event.HasField("task"):
            self.add_task(event.task)
        elif event.HasField("message"):
            self.message_only = True
            self._add_message(event.message)
        elif event.HasField("status_update"):
            update = event.status_update
            self.task_id = update.task_id or self.task_id
            meta = MessageToDict(update.metadata) if update.HasField("metadata") else {}
            # ADK names the author on the event, not on its message.
            self._set_status(update.status, _author(meta))
            usage = _usage_from(meta) if meta else None
            if usage is not None:
                self.event_usage = usage + self.event_usage
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            self.task_id = update.task_id or self.task_id
            self._add_artifact(update.artifact, append=update.append)

    def add_task(self, task: Task) -> None:
        self.task_id = task.id or self.task_id
        for message in task.history:
            self._add_message(message)
        for artifact in task.artifacts:
            self._add_artifact(artifact, append=False)
        self._set_status(task.status)

    def _set_status(self, status: Any, author: str | None = None) -> None:
        from a2a.types.a2a_pb2 import TaskState

        self.state = TaskState.Name(status.state)
        if status.HasField("message"):
            self._add_message(status.message, author)
            parts = _parts(status.message.parts)
            self.status_text = _text(parts)
            self.status_meta = _struct(status.message, "metadata")
        else:
            self.status_text, self.status_meta = "", {}

    def _key(self, kind: str, item_id: str) -> tuple[str, str]:
        if item_id:
            return kind, item_id
        self._anon += 1
        return kind, f"#{self._anon}"

    def _add_message(self, message: Any, author: str | None = None) -> None:
        from a2a.types.a2a_pb2 import Role

        if message.role == Role.ROLE_USER:
            return
        key = self._key("message", message.message_id)
        if key not in self.items:
            self.items[key] = [self._counted(_parts(message.parts, _author(_struct(message, "metadata")) or author))]

    def _counted(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.empty_parts += sum(1 for p in parts if not any(k in p for k in _CONTENT_KEYS))
        return parts

    def _add_artifact(self, artifact: Any, *, append: bool) -> None:
        key = self._key("artifact", artifact.artifact_id)
        meta = _struct(artifact, "metadata")
        chunk = self._counted(_parts(artifact.parts, _author(meta)))
        if append and key in self.items:
            self.items[key].append(chunk)
        else:
            self.items[key] = [chunk]
        usage = _usage_from(meta)
        if usage is not None:
            self.artifact_usage[key[1]] = usage

    # -- the turn's output ------------------------------------------------------------------
    def output(self, raw: Any = None) -> AgentOutput:
        parts = [p for chunks in self.items.values() for chunk in chunks for p in chunk]
        trajectory = self.extractor(parts)
        message_texts: list[str] = []
        artifact_texts: list[str] = []
        data: dict[str, Any] = {}  # kind -> the last data part that is not a tool call
        self.answered = False
        for (kind, _), chunks in self.items.items():
            text = "".join(_text(chunk) for chunk in chunks)
            if text:
                (artifact_texts if kind == "artifact" else message_texts).append(text)
            for part in (p for chunk in chunks for p in chunk):
                if "text" in part:
                    self.answered = True
                elif "data" in part and (part.get("metadata") or {}).get(ADK_TYPE_KEY) not in _TOOL_KINDS:
                    data[kind] = part["data"]
        if artifact_texts:
            response, intermediate = artifact_texts[-1], message_texts + artifact_texts[:-1]
        elif message_texts:
            response, intermediate = message_texts[-1], message_texts[:-1]
        elif data:
            # A reply with only structured data: its JSON is the answer.
            self.answered = True
            answer = data.get("artifact", data.get("message"))
            response, intermediate = json.dumps(answer, ensure_ascii=False, sort_keys=True), []
        else:
            response, intermediate = "", []
        if intermediate and intermediate[-1] == response:
            intermediate = intermediate[:-1]  # a server that repeats its answer in the final status
        usage: Usage | None = self.event_usage
        for u in self.artifact_usage.values():
            usage = u + usage
        return AgentOutput(
            response=response,
            trajectory=trajectory,
            intermediate_responses=intermediate,
            usage=usage,
            handoffs=_handoffs(parts),
            raw=raw,
        )


def _handoffs(parts: list[dict[str, Any]]) -> list[Handoff]:
    """Each change of author along the parts (ADK names the author of each streamed event; a
    non-streamed ADK task names none, so it shows no hand-offs)."""
    out: list[Handoff] = []
    current: str | None = None
    for part in parts:
        author = _author(part.get("metadata") or {})
        if author is None or author == current:
            continue
        if current is not None:
            out.append(Handoff(from_agent=current, to_agent=author))
        current = author
    return out


def _struct(message: Any, field: str) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return restore_ints(MessageToDict(getattr(message, field))) if message.HasField(field) else {}


def _parts(parts: Any, author: str | None = None) -> list[dict[str, Any]]:
    """The parts as JSON dicts; the author of their message or artifact, if any, put on each."""
    from google.protobuf.json_format import MessageToDict

    out = [restore_ints(MessageToDict(p)) for p in parts]
    if author:
        for part in out:
            meta = part.setdefault("metadata", {})
            if _author(meta) is None:
                meta[AUTHOR_KEYS[0]] = author
    return out


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(
        p["text"]
        for p in parts
        if isinstance(p.get("text"), str) and not (p.get("metadata") or {}).get("adk_thought")
    )


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


def _marked(error: AdapterError, failure_class: str, rule: str | None) -> AdapterError:
    """``error`` carrying whose fault it was (``failure_class``) and the rule broken (``failure_rule``)."""
    error.failure_class = failure_class  # type: ignore[attr-defined]
    error.failure_rule = rule  # type: ignore[attr-defined]
    return error


_CREDENTIAL_NAME = re.compile(
    r"auth|token|key|secret|passw|pwd|cookie|session|credential|signature|bearer|jwt|^sig$|^code$", re.IGNORECASE
)


def is_credential_name(name: str) -> bool:
    """Whether a header or query parameter named ``name`` carries a credential (its value is redacted).

    By name: ``Authorization``, ``Proxy-Authorization``, ``X-API-Key``, ``api-key``, ``Cookie``,
    ``X-Auth-Token``, ``?token=``, ``?access_token=``, ``?sig=``... A header such as ``X-Tag`` or a
    parameter such as ``?tenant=`` is sent as it is and never redacted.
    """
    return bool(_CREDENTIAL_NAME.search(name))


def _header_secrets(name: str, value: str) -> list[str]:
    """The secret strings in one credential header's value: the whole value and the parts a server
    may echo alone (the token after ``Bearer``, a Basic pair decoded, each cookie's value)."""
    found = [value]
    scheme, _, rest = value.partition(" ")
    if rest and " " not in rest.strip():
        found.append(rest.strip())  # "Bearer s3cret": a server may echo the token alone
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(rest.strip(), validate=True).decode()
            except ValueError:
                pair = ""
            if ":" in pair:
                found += [pair, pair.partition(":")[2]]
    if "cookie" in name.lower():
        found += [v.strip() for _, _, v in (c.partition("=") for c in value.split(";"))]
    return found


def _secrets(
    headers: Mapping[str, str], auth: tuple[str, str] | None, params: list[tuple[str, str]]
) -> tuple[str, ...]:
    """Every credential string to redact, longest first (so a token inside a value goes too).

    Exact values of any length: the credential headers' values, the URL's password and
    ``user:password`` (and the Basic header it becomes), credential query values; each also as
    it appears percent-encoded in a URL. A user name alone is no secret and stays.
    """
    found: list[str] = []
    for name, value in headers.items():
        if is_credential_name(name):
            found += _header_secrets(name, value)
    if auth:
        pair = f"{auth[0]}:{auth[1]}"
        found += [auth[1], pair, base64.b64encode(pair.encode()).decode()]
    found += [value for name, value in params if is_credential_name(name)]
    every = set(found)
    for value in found:
        every.update((urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")))
    return tuple(sorted((v for v in every if v), key=len, reverse=True))


_WHOLE_WORD = 8
"""Secrets shorter than this are replaced only where they stand alone (not inside a longer word):
``pw`` is redacted in "password pw", never in "pwd"; a longer one is replaced wherever it occurs."""


def _secret_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex matching every secret exactly (short ones as whole words), longest first."""
    if not secrets:
        return None
    alternatives = [
        re.escape(s) if len(s) >= _WHOLE_WORD else rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])"
        for s in secrets
    ]
    return re.compile("|".join(alternatives))


def hide_url_credentials(text: str) -> str:
    """``text`` with the password and credential query values of every http(s) URL in it shown as ``***``.

    For text shown to a person (a command to run again): the user name, host, path and other
    parameters stay, so the place the credentials go back is visible.
    """

    def hide(match: re.Match[str]) -> str:
        parts = urllib.parse.urlsplit(match.group(0))
        netloc = parts.netloc
        user, at, host = netloc.rpartition("@")
        if at and ":" in user:
            netloc = f"{user.partition(':')[0]}:{_REDACTED}@{host}"
        query = "&".join(
            f"{name}={_REDACTED}" if is_credential_name(urllib.parse.unquote_plus(name)) and sep else f"{name}{sep}{value}"
            for name, sep, value in (item.partition("=") for item in parts.query.split("&") if item)
        )
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    return re.sub(r"https?://[^\s'\"]+", hide, text)


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


def _progress(turn: _Turn) -> str:
    calls = sum(
        1
        for chunks in turn.items.values()
        for chunk in chunks
        for p in chunk
        if (p.get("metadata") or {}).get(ADK_TYPE_KEY) == FUNCTION_CALL
    )
    state = f"task {turn.state.removeprefix('TASK_STATE_').lower()}" if turn.state else ""
    if not turn.items:
        return f" ({state})" if state else ""
    return f" (after {len(turn.items)} message(s) or artifact(s), {calls} tool call(s){', ' + state if state else ''})"


def _earliest(*seconds: float | None) -> float | None:
    known = [s for s in seconds if s is not None]
    return min(known) if known else None


def _raised_in_sdk(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside a2a-sdk or protobuf code (reading an answer), not ours."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and any(f"{sep}{pkg}{sep}" in last for pkg in ("a2a", "protobuf") for sep in "/\\")


class A2AAgent:
    """A remote agent that speaks A2A, evaluated like a local one.

    ``url_or_card`` is the agent's base URL (its card is read from
    ``/.well-known/agent-card.json``), an a2a ``AgentCard``, or a card as a JSON dict. The agent
    is named after its card (read once, when the name is first needed) unless ``name`` is given.
    ``headers`` go with every request (e.g. ``{"Authorization": "Bearer ..."}``); credentials in
    the URL (``user:pass@host``, ``?token=...``) go with every request too. ``timeout`` bounds
    the whole run of one turn: the request, every wait between streamed events, polling a task
    still working, and waits a server asks for with ``Retry-After``. ``streaming=False`` asks
    for the final task only. ``transport`` (``"JSONRPC"`` or ``"HTTP+JSON"``) forces one
    binding; by default the card's preference among those two is used.
    """

    def __init__(
        self,
        url_or_card: Any,
        *,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        streaming: bool = True,
        timeout: float | None = 60.0,
        trajectory_extractor: TrajectoryExtractor | None = None,
        transport: str | None = None,
    ) -> None:
        _require_a2a()
        from a2a.utils.constants import TransportProtocol

        self.headers = _checked_headers(headers)
        self._auth: tuple[str, str] | None = None
        self._params: list[tuple[str, str]] = []
        self._card: AgentCard | None = None
        if isinstance(url_or_card, str):
            if not url_or_card.startswith(("http://", "https://")):
                # Shown only when it cannot hold a credential (user:pass@..., ?token=...).
                shown = repr(url_or_card) if not re.search(r"[@?]", url_or_card) else "a string (not shown: it may hold a credential)"
                raise ConfigError(f"A2AAgent needs an http(s):// URL or an AgentCard, got {shown}")
            self.url, self._auth, self._params = _split_credentials(url_or_card)
        else:
            self._card = self._parse_card(url_or_card)
            interfaces = list(self._card.supported_interfaces)
            self.url = _split_credentials(interfaces[0].url)[0] if interfaces else ""
        if self._auth and any(k.lower() == "authorization" for k in self.headers):
            # Both would set the one Authorization header sent: refuse rather than drop one silently.
            raise ConfigError(
                "A2AAgent: the URL has user:password@ and headers= has an Authorization header; both set the "
                "Authorization sent, so give only one (the URL's becomes 'Authorization: Basic ...')"
            )
        self._secrets = _secrets(self.headers, self._auth, self._params)
        self._secret_re = _secret_pattern(self._secrets)
        card_name = self._card.name if self._card is not None and self._card.name else None
        self._name: str | None = name or (self.redact(card_name) if card_name else None)
        self.streaming = streaming
        if timeout is not None and timeout <= 0:
            raise ConfigError("A2AAgent(timeout=...) must be > 0 seconds, or None for no limit")
        self.timeout = timeout
        self.trajectory_extractor: TrajectoryExtractor = trajectory_extractor or adk_trajectory
        known = {p.value.lower(): p.value for p in TransportProtocol} | {"rest": TransportProtocol.HTTP_JSON.value}
        if transport is not None and transport.lower() not in known:
            raise ConfigError(f"transport {transport!r}: expected 'JSONRPC' or 'HTTP+JSON'")
        self.transport = known[transport.lower()] if transport else None
        # One httpx/a2a client per event loop: each evaluate() call may run in a new loop,
        # and an httpx connection pool must not cross loops.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = (
            weakref.WeakKeyDictionary()
        )
        self._partials: dict[tuple[str | None, str, int], _Turn] = {}

    @property
    def endpoint(self) -> str:
        """What this agent's calls go to, for rate limits: ``a2a http://host:port`` (agents on one host share it)."""
        parts = urllib.parse.urlsplit(self.url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"a2a {parts.scheme}://{parts.hostname or ''}:{port}"

    @property
    def name(self) -> str:
        """The agent's name: ``name=`` if given, else its card's name, else its URL (credentials removed).

        Read once and then fixed, so every run of an evaluation carries the same name. Reading it
        the first time fetches the card (and keeps it for the connection) when none was given.
        """
        if self._name is None:
            self._name = self._card_name() or self.url
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def _card_name(self) -> str | None:
        if self._card is None:
            import httpx
            from a2a.client.card_resolver import parse_agent_card
            from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

            try:
                options = self._http_options(min(self.timeout or 10.0, 10.0))
                with httpx.Client(**options, event_hooks={"response": [_cap_response]}) as http:
                    response = http.get(f"{self.url}{AGENT_CARD_WELL_KNOWN_PATH}")
                    response.raise_for_status()
                    self._card = parse_agent_card(response.json())
            except Exception:  # the runs will say what is wrong with the server; the URL names it
                return None
        # A card that echoes a credential must not name the agent in every record.
        return self.redact(self._card.name) if self._card.name else None

    def _http_options(self, timeout: float | None) -> dict[str, Any]:
        import httpx

        return {
            # Uncompressed, so the bytes counted against the response cap are the bytes parsed.
            "headers": {"Accept-Encoding": "identity", **self.headers},
            "params": self._params,
            "auth": httpx.BasicAuth(*self._auth) if self._auth else None,
            "timeout": httpx.Timeout(timeout),
        }

    @staticmethod
    def _parse_card(card: Any) -> AgentCard:
        from a2a.types.a2a_pb2 import AgentCard

        if isinstance(card, AgentCard):
            return card
        if isinstance(card, Mapping):
            from a2a.client.card_resolver import parse_agent_card

            try:
                return parse_agent_card(dict(card))
            except Exception as exc:
                raise ConfigError(f"A2AAgent: the agent card dict is not a valid A2A card: {exc}") from None
        raise ConfigTypeError(f"A2AAgent needs an http(s):// URL or an AgentCard, got {type(card).__name__}")

    def __repr__(self) -> str:
        return f"A2AAgent({self.url!r}, name={self._name!r})"

    def redact(self, text: str) -> str:
        """``text`` with this agent's credentials (exact values, see ``is_credential_name``) replaced by ``***``."""
        return text if self._secret_re is None else self._secret_re.sub(_REDACTED, text)

    # -- conformance ----------------------------------------------------------------------------
    async def apreflight(self, prompt: str | None = None, *, timeout: float | None = None,
                         every_version: bool = True) -> Any:
        """Check that this agent speaks A2A (its card, then probe messages): a ``Preflight`` table of
        checks; see :mod:`levelfield.adapters.a2a.preflight`. Sent with this agent's headers and URL
        credentials. ``every_version=False``: only the card's first JSON-RPC version is probed (what an
        evaluation does before its first case: each probe is an answer the agent computes)."""
        from .preflight import DEFAULT_PROMPT, _run

        found = await _run(self.url, self.headers, self._auth, self._params, prompt or DEFAULT_PROMPT,
                           timeout or min(self.timeout or 30.0, 30.0), every_version=every_version)
        found.agent = self.name if self._name else (self.redact(found.agent) if found.agent else None)
        # A server may echo a credential into what the checks quote (an error body): never recorded.
        found.checks = [dataclasses.replace(c, detail=self.redact(c.detail)) for c in found.checks]
        return found

    def preflight(self, prompt: str | None = None, *, timeout: float | None = None, every_version: bool = True) -> Any:
        """:meth:`apreflight` from sync code."""
        from ..._core.run.threads import run_coroutine

        return run_coroutine(self.apreflight(prompt, timeout=timeout, every_version=every_version))

    # -- clients ------------------------------------------------------------------------------
    async def _client(self) -> Client:
        loop = asyncio.get_running_loop()
        holder = self._clients.get(loop)
        if holder is None:
            holder = self._clients[loop] = _LoopClient()
        async with holder.lock:
            if holder.client is None:
                holder.client, holder.http = await self._connect()
                # asyncio.run() closes every live async generator before it closes the loop:
                # one parked here closes the connections then, however the loop was started.
                holder.closer = _close_at_loop_end(holder.http)
                await holder.closer.__anext__()
        return holder.client

    async def _connect(self) -> tuple[Client, Any]:
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
        from a2a.utils.constants import TransportProtocol

        http = httpx.AsyncClient(
            **self._http_options(self.timeout),
            # As many connections as the runner may have runs in flight.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
            event_hooks={"response": [_acap_response]},
        )
        try:
            if self._card is None:
                card = await A2ACardResolver(http, self.url).get_agent_card()
                self._card = card
            bindings = [self.transport] if self.transport else [
                TransportProtocol.JSONRPC.value,
                TransportProtocol.HTTP_JSON.value,
            ]
            config = ClientConfig(
                streaming=self.streaming,
                httpx_client=http,
                supported_protocol_bindings=bindings,
                use_client_preference=self.transport is not None,
            )
            try:
                client = ClientFactory(config).create(self._card)
            except ValueError as exc:
                offered = sorted({i.protocol_binding for i in self._card.supported_interfaces}) or ["none"]
                raise AdapterError(
                    f"agent {self.name!r}: its card offers no usable transport ({exc}); it offers "
                    f"{', '.join(offered)}, A2AAgent speaks {' or '.join(bindings)}",
                    error_type="bad_card",
                ) from None
        except BaseException:
            await http.aclose()
            raise
        return client, http

    async def aclose(self) -> None:
        """Close the HTTP connections this agent opened in the running event loop."""
        holder = self._clients.pop(asyncio.get_running_loop(), None)
        if holder is not None and holder.closer is not None:
            await holder.closer.aclose()

    # -- one turn -----------------------------------------------------------------------------
    def _message(self, request: AgentRequest) -> Any:
        from a2a.types.a2a_pb2 import Message, Part, Role

        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            context_id=request.session_id or "",
            parts=[Part(text=request.prompt)],
        )
        extra: dict[str, Any] = {"case_id": request.case_id, "turn": request.turn}
        if request.turn == 0 and request.history:
            # A2A has no field for prior messages; levelfield's server reads them from here,
            # other servers ignore the metadata.
            extra["history"] = [m.model_dump() for m in request.history]
        state = request.state  # the case's initial session state
        if state:
            extra["state"] = state
        message.metadata.update({LEVELFIELD_KEY: extra})
        return message

    async def arun(self, request: AgentRequest) -> AgentOutput:
        """Send the turn's prompt (one ``context_id`` per case and trial) and read the answer."""
        turn = _Turn(self.trajectory_extractor)
        key = (request.session_id, request.case_id, request.turn)
        try:
            if self.timeout is None:
                await self._attempts(request, turn, None)
            elif _timeout_scope is not None:
                # asyncio.timeout bounds the whole turn in place: a stream of keep-alives or a
                # task left working cannot outlast it. (wait_for would add a task per run.)
                async with _timeout_scope(self.timeout):
                    await self._attempts(request, turn, time.monotonic() + self.timeout)
            else:  # Python 3.10
                await asyncio.wait_for(self._attempts(request, turn, time.monotonic() + self.timeout), self.timeout)
        except asyncio.CancelledError:
            self._partials[key] = turn  # the runner timed out: partial_output() will ask
            raise
        except (asyncio.TimeoutError, TimeoutError):
            said = "" if turn.items else "; the server did not answer in time: is it overloaded or stuck?"
            if turn.ended_running:
                said = "; the answer had ended with the task still working and polling it never saw a final state"
            raise _marked(AdapterError(
                self.redact(f"agent {self.name!r} at {self.url}: no complete answer within {self.timeout} s"
                            f"{_progress(turn)}{said} (A2AAgent(timeout=...) bounds the whole turn)"),
                error_type="timeout",
                partial=self._output(turn) if turn.items else None,
            ), *self._timeout_class(turn)) from None
        return self._finish(turn)

    async def _attempts(self, request: AgentRequest, turn: _Turn, deadline: float | None) -> None:
        """One exchange; a 429/503 with ``Retry-After`` is waited out and tried again, within the
        run's timeout budget (this agent's and the runner's, whichever ends first) — unless the runner
        adapts to rate limits itself (``RunConfig(adaptive=True)``): then the first 429/503 is raised
        as a ``RateLimitedError``, so the call frees its place while it waits."""
        absorbed = budget.absorbs_rate_limits()
        for attempt in itertools.count(1):
            try:
                await self._exchange(request, turn)
                return
            except (AdapterError, asyncio.CancelledError):
                raise
            except Exception as exc:
                wait = _retry_after(exc)
                left = _earliest(None if deadline is None else deadline - time.monotonic(), budget.seconds_left())
                if not absorbed and wait is not None and attempt <= _MAX_SERVER_RETRIES and (left is None or wait < left):
                    await asyncio.sleep(wait)
                    continue
                raise self._error(exc, turn, wait, left) from exc

    async def _exchange(self, request: AgentRequest, turn: _Turn) -> None:
        from a2a.types.a2a_pb2 import GetTaskRequest, SendMessageRequest

        client = await self._client()
        async for event in client.send_message(SendMessageRequest(message=self._message(request))):
            turn.add(event)
        turn.ended_running = turn.state in _RUNNING and bool(turn.task_id) and not turn.message_only
        # A server that answers before the task is done: poll it until it is (the turn's
        # timeout bounds this).
        while turn.state in _RUNNING and turn.task_id and not turn.message_only:
            await asyncio.sleep(_POLL_SECONDS)
            turn.add_task(await client.get_task(GetTaskRequest(id=turn.task_id)))

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What a run cut short by the runner's timeout had received (tool calls, texts)."""
        turn = self._partials.pop((request.session_id, request.case_id, request.turn), None)
        return self._output(turn) if turn is not None else None

    def _output(self, turn: _Turn) -> AgentOutput:
        output = turn.output()
        if not self._secrets:
            return output
        # A server that echoes a credential into its answer must not get it recorded.
        return AgentOutput(
            response=self.redact(output.response),
            trajectory=[
                c.model_copy(update={"tool_input": self._redact_value(c.tool_input), "tool_output": self._redact_value(c.tool_output)})
                for c in output.trajectory
            ],
            intermediate_responses=[self.redact(t) for t in output.intermediate_responses],
            usage=output.usage,
            raw=output.raw,
        )

    def _redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self._redact_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_value(v) for v in value]
        return value

    def _finish(self, turn: _Turn) -> AgentOutput:
        state = turn.state
        output = self._output(turn)
        if turn.message_only or state == "TASK_STATE_COMPLETED":
            if not turn.answered:
                empty = f"; {turn.empty_parts} part(s) had no content at all" if turn.empty_parts else ""
                raise _marked(AdapterError(
                    f"agent {self.name!r}: the answer has no text and no data part"
                    f"{_progress(turn)}{empty}; nothing to score as the response",
                    error_type="empty_response",
                    partial=output,
                ), *(classify("empty_part") if turn.empty_parts else classify("empty_response")))
            return output
        said = f": {self.redact(turn.status_text)}" if turn.status_text else ""
        if state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
            what = "input" if state == "TASK_STATE_INPUT_REQUIRED" else "authentication"
            raise _marked(AdapterError(
                f"agent {self.name!r} asked for {what} instead of finishing the task{said}",
                error_type="input_required" if what == "input" else "auth_required",
                partial=output,
            ), AGENT, None)
        if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
            word = {"TASK_STATE_FAILED": "failed", "TASK_STATE_REJECTED": "rejected", "TASK_STATE_CANCELED": "canceled"}[state]
            remote_type = turn.status_meta.get(ERROR_TYPE_KEY)
            raise _marked(AdapterError(
                f"agent {self.name!r}: the task {word}{said}",
                error_type=str(remote_type) if remote_type else f"task_{word}",
                partial=output,
            ), AGENT, None)
        raise _marked(AdapterError(
            f"agent {self.name!r}: the answer ended while the task was {state or 'not started'}",
            error_type="incomplete",
            partial=output,
        ), *classify("incomplete"))

    def _error(self, exc: Exception, turn: _Turn, retry_after: float | None = None, left: float | None = None) -> AdapterError:
        """The AdapterError a failed exchange is recorded as (credentials redacted); connection and
        overload errors are transient."""
        error = self._classify(exc, turn, retry_after, left)
        error.args = (self.redact(str(error)),)
        claimed = self.streaming and self._card is not None and self._card.capabilities.streaming
        return _marked(error, *classify(error.error_type, retry_after=retry_after is not None,
                                        streaming_claimed=claimed, jsonrpc=self._binding() == "JSONRPC"))

    def _binding(self) -> str | None:
        """The binding the client speaks: the one forced, else the card's first that A2AAgent speaks."""
        if self.transport or self._card is None:
            return self.transport
        return next((i.protocol_binding for i in self._card.supported_interfaces
                     if i.protocol_binding in ("JSONRPC", "HTTP+JSON")), None)

    def _timeout_class(self, turn: _Turn | None) -> tuple[str, str | None]:
        # A turn whose answer ended with the task still working, then never finished: the protocol's
        # fault; a timeout while the answer was still coming: the transport's.
        if turn is not None and turn.ended_running:
            return classify("stream_ended_running")
        return TRANSPORT, None

    def classify_failure(self, error: BaseException, request: AgentRequest) -> tuple[str, str | None]:
        """(class, rule) of a failed run: ``protocol``, ``transport`` or ``agent`` (see
        :mod:`levelfield.adapters.a2a.failures`); the runner records them on the run."""
        known = getattr(error, "failure_class", None)
        if known in CLASSES:
            return known, getattr(error, "failure_rule", None)
        if isinstance(error, (asyncio.TimeoutError, TimeoutError, asyncio.CancelledError)):
            # The runner's timeout: what had arrived tells whose fault it was.
            return self._timeout_class(self._partials.get((request.session_id, request.case_id, request.turn)))
        return classify(getattr(error, "error_type", None))  # e.g. a card without a usable interface

    def _classify(self, exc: Exception, turn: _Turn, retry_after: float | None, left: float | None) -> AdapterError:
        import httpx
        from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
        from a2a.utils.errors import A2AError

        partial = self._output(turn) if turn.items else None
        chain = _chain(exc)
        where = f"agent {self.name!r} at {self.url}"
        too_large = next((e for e in chain if isinstance(e, ResponseTooLarge)), None)
        if too_large is not None:
            return AdapterError(
                f"{where}: {too_large}{_progress(turn)}; the read was stopped there. Raise the cap with "
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
                    body = self.redact(e.response.text.strip())[:300]
                except Exception:  # a streamed body that was never read
                    body = ""
        detail = f": {body}" if body else ""
        if any(isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout)) for e in chain):
            return _connection_error(where, self.url, self.timeout, chain, partial)
        if any(isinstance(e, (A2AClientTimeoutError, httpx.TimeoutException)) for e in chain):
            return AdapterError(
                f"{where}: no answer within {self.timeout} s{_progress(turn)}; the server took the request but did "
                "not answer in time: is it overloaded or stuck? (A2AAgent(timeout=...) sets the wait)",
                error_type="timeout",
                partial=partial,
            )
        if any(isinstance(e, (httpx.RemoteProtocolError, httpx.NetworkError)) for e in chain):
            return _transient(
                f"{where}: the connection broke before the answer was complete{_progress(turn)} ({_innermost(chain)})",
                "connection_lost",
                partial,
            )
        if status in (429, 503) and retry_after is not None and left is not None and retry_after >= left:
            # Not transient: a retry sooner than the server asked would only be refused again.
            return AdapterError(
                f"{where}: HTTP {status}, the server asked to retry after {retry_after:g} s, more than the "
                f"{max(left, 0):.1f} s left of the run's timeout (A2AAgent(timeout={self.timeout}), "
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
                f"{_progress(turn)}): {type(exc).__name__}: {exc}",
                error_type="bad_response",
                partial=partial,
            )
        return AdapterError(f"{where}: {type(exc).__name__}: {exc}", error_type=type(exc).__name__, partial=partial)


_RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
_CONTENT_KEYS = ("text", "raw", "url", "data")
_TOOL_KINDS = (FUNCTION_CALL, FUNCTION_RESPONSE)


class _LoopClient:
    """The a2a client and its httpx client for one event loop."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.client: Any = None
        self.http: Any = None
        self.closer: Any = None


async def _close_at_loop_end(http: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        if not http.is_closed:
            await http.aclose()
