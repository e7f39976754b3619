"""A2A adapter: evaluate a remote agent that speaks the A2A protocol (a2a-sdk 1.x).

``A2AAgent(url_or_card)`` resolves the agent card, picks a transport the card offers (JSON-RPC
or HTTP+JSON), sends one message per turn and reads the event stream (or the final task when
streaming is off). Tool calls are read from data parts marked the way ADK marks them
(``metadata["adk_type"]`` = ``function_call`` / ``function_response``); servers that mark them
differently plug in their own ``trajectory_extractor``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..core.errors import AdapterError, ConfigError, ConfigTypeError, MissingExtraError, TransientAgentError
from ..core.protocol import AgentRequest
from ..core.types import AgentOutput, ToolCall, Usage

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

TrajectoryExtractor = Callable[[list[dict[str, Any]]], list[ToolCall]]
"""``fn(parts) -> trajectory``: every agent part of one turn, in order, as JSON dicts
(``{"text": ...}`` or ``{"data": ..., "metadata": {...}}``), whole floats already restored to ints."""

_POLL_SECONDS = 0.25


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
                agent=meta.get("levelfield_agent"),
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


def _usage_from(meta: Mapping[str, Any] | None) -> Usage | None:
    raw = (meta or {}).get(USAGE_KEY)
    if not isinstance(raw, dict):
        return None

    def pick(*keys: str) -> int:
        for key in keys:
            if isinstance(raw.get(key), (int, float)):
                return int(raw[key])
        return 0

    inp = pick("promptTokenCount", "prompt_token_count", "input_tokens")
    out = pick("candidatesTokenCount", "candidates_token_count", "output_tokens")
    total = pick("totalTokenCount", "total_token_count", "total_tokens") or inp + out
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=total)


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
            self._set_status(update.status)
            usage = _usage_from(MessageToDict(update.metadata)) if update.HasField("metadata") else None
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

    def _set_status(self, status: Any) -> None:
        from a2a.types.a2a_pb2 import TaskState

        self.state = TaskState.Name(status.state)
        if status.HasField("message"):
            self._add_message(status.message)
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

    def _add_message(self, message: Any) -> None:
        from a2a.types.a2a_pb2 import Role

        if message.role == Role.ROLE_USER:
            return
        key = self._key("message", message.message_id)
        if key not in self.items:
            self.items[key] = [_parts(message.parts)]

    def _add_artifact(self, artifact: Any, *, append: bool) -> None:
        key = self._key("artifact", artifact.artifact_id)
        chunk = _parts(artifact.parts)
        if append and key in self.items:
            self.items[key].append(chunk)
        else:
            self.items[key] = [chunk]
        usage = _usage_from(_struct(artifact, "metadata"))
        if usage is not None:
            self.artifact_usage[key[1]] = usage

    # -- the turn's output ------------------------------------------------------------------
    def output(self, raw: Any = None) -> AgentOutput:
        parts = [p for chunks in self.items.values() for chunk in chunks for p in chunk]
        trajectory = self.extractor(parts)
        message_texts: list[str] = []
        artifact_texts: list[str] = []
        for (kind, _), chunks in self.items.items():
            text = "".join(_text(chunk) for chunk in chunks)
            if text:
                (artifact_texts if kind == "artifact" else message_texts).append(text)
        if artifact_texts:
            response, intermediate = artifact_texts[-1], message_texts + artifact_texts[:-1]
        elif message_texts:
            response, intermediate = message_texts[-1], message_texts[:-1]
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
            raw=raw,
        )


def _struct(message: Any, field: str) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return restore_ints(MessageToDict(getattr(message, field))) if message.HasField(field) else {}


def _parts(parts: Any) -> list[dict[str, Any]]:
    from google.protobuf.json_format import MessageToDict

    return [restore_ints(MessageToDict(p)) for p in parts]


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


class A2AAgent:
    """A remote agent that speaks A2A, evaluated like a local one.

    ``url_or_card`` is the agent's base URL (its card is read from
    ``/.well-known/agent-card.json``), an a2a ``AgentCard``, or a card as a JSON dict.
    ``headers`` go with every request (e.g. ``{"Authorization": "Bearer ..."}``); ``timeout``
    bounds each HTTP request and each wait between streamed events; ``streaming=False`` asks
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

        self._card: AgentCard | None = None
        if isinstance(url_or_card, str):
            if not url_or_card.startswith(("http://", "https://")):
                raise ConfigError(f"A2AAgent needs an http(s):// URL or an AgentCard, got {url_or_card!r}")
            self.url = url_or_card.rstrip("/")
        else:
            self._card = self._parse_card(url_or_card)
            interfaces = list(self._card.supported_interfaces)
            self.url = interfaces[0].url if interfaces else ""
        self.name = name or (self._card.name if self._card is not None and self._card.name else self.url)
        self.headers = dict(headers or {})
        self.streaming = streaming
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
        return f"A2AAgent({self.url!r}, name={self.name!r})"

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
            headers=self.headers,
            timeout=httpx.Timeout(self.timeout),
            # As many connections as the runner may have runs in flight.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
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
        message.metadata.update({LEVELFIELD_KEY: extra})
        return message

    async def arun(self, request: AgentRequest) -> AgentOutput:
        """Send the turn's prompt (one ``context_id`` per case and trial) and read the answer."""
        from a2a.types.a2a_pb2 import GetTaskRequest, SendMessageRequest

        turn = _Turn(self.trajectory_extractor)
        key = (request.session_id, request.case_id, request.turn)
        try:
            client = await self._client()
            async for event in client.send_message(SendMessageRequest(message=self._message(request))):
                turn.add(event)
            # A server that answers before the task is done: poll it until it is.
            while turn.state in _RUNNING and turn.task_id and not turn.message_only:
                await asyncio.sleep(_POLL_SECONDS)
                turn.add_task(await client.get_task(GetTaskRequest(id=turn.task_id)))
        except asyncio.CancelledError:
            self._partials[key] = turn  # the runner timed out: partial_output() will ask
            raise
        except AdapterError:
            raise
        except Exception as exc:
            raise self._error(exc, turn) from exc
        return self._finish(turn)

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What a run cut short by the runner's timeout had received (tool calls, texts)."""
        turn = self._partials.pop((request.session_id, request.case_id, request.turn), None)
        return turn.output() if turn is not None else None

    def _finish(self, turn: _Turn) -> AgentOutput:
        state = turn.state
        if turn.message_only or state == "TASK_STATE_COMPLETED":
            return turn.output()
        partial = turn.output()
        said = f": {turn.status_text}" if turn.status_text else ""
        if state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
            what = "input" if state == "TASK_STATE_INPUT_REQUIRED" else "authentication"
            raise AdapterError(
                f"agent {self.name!r} asked for {what} instead of finishing the task{said}",
                error_type="input_required" if what == "input" else "auth_required",
                partial=partial,
            )
        if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
            word = {"TASK_STATE_FAILED": "failed", "TASK_STATE_REJECTED": "rejected", "TASK_STATE_CANCELED": "canceled"}[state]
            remote_type = turn.status_meta.get(ERROR_TYPE_KEY)
            raise AdapterError(
                f"agent {self.name!r}: the task {word}{said}",
                error_type=str(remote_type) if remote_type else f"task_{word}",
                partial=partial,
            )
        raise AdapterError(
            f"agent {self.name!r}: the answer ended while the task was {state or 'not started'}",
            error_type="incomplete",
            partial=partial,
        )

    def _error(self, exc: Exception, turn: _Turn) -> AdapterError:
        """The AdapterError a failed exchange is recorded as; connection and overload errors are transient."""
        import httpx
        from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
        from a2a.utils.errors import A2AError

        partial = turn.output() if turn.items else None
        chain = _chain(exc)
        where = f"agent {self.name!r} at {self.url}"
        status = getattr(exc, "status_code", None)
        body = ""
        for e in chain:
            if isinstance(e, httpx.HTTPStatusError):
                status = e.response.status_code
                try:
                    body = e.response.text.strip()[:200]
                except Exception:  # a streamed body that was never read
                    body = ""
        detail = f": {body}" if body else ""
        if any(isinstance(e, (A2AClientTimeoutError, httpx.TimeoutException)) for e in chain):
            return AdapterError(f"{where}: no answer within {self.timeout} s", error_type="timeout", partial=partial)
        if any(isinstance(e, (httpx.ConnectError, httpx.RemoteProtocolError, httpx.NetworkError)) for e in chain):
            return _transient(f"{where}: cannot connect ({exc})", "connection_error", partial)
        if status in (429, 502, 503, 504):
            return _transient(f"{where}: HTTP {status}, the server is busy or unavailable{detail}", f"http_{status}", partial)
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
        return AdapterError(f"{where}: {type(exc).__name__}: {exc}", error_type=type(exc).__name__, partial=partial)


_RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


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
