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
import dataclasses
import itertools
import re
import time
import urllib.parse
import uuid
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ..._core.data.protocol import AgentRequest
from ..._core.data.types import AgentOutput
from ..._core.errors import AdapterError, ConfigError, ConfigTypeError, MissingExtraError
from ..._core.run import budget
from .bounded import DEFAULT_CARD_SECONDS, CardReadError, read_card
from .events import (
    ERROR_TYPE_KEY,
    LEVELFIELD_KEY,
    TrajectoryExtractor,
    _progress,
    _Turn,
    adk_trajectory,
)
from .failures import AGENT, CLASSES, TRANSPORT, classify
from .http import (
    _MAX_SERVER_RETRIES,
    _acap_response,
    _checked_headers,
    _exchange_error,
    _retry_after,
    _split_credentials,
)
from .secrets import _REDACTED, _secret_pattern, _secrets
from .traffic import Traffic, _busy

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types.a2a_pb2 import AgentCard

__all__ = ["A2AAgent"]

_POLL_SECONDS = 0.25
_timeout_scope = getattr(asyncio, "timeout", None)  # Python 3.11+


def _require_a2a() -> None:
    try:
        import a2a.client  # noqa: F401
        import httpx  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("a2a", "a2a-sdk", "A2AAgent") from exc


def _marked(error: AdapterError, failure_class: str, rule: str | None) -> AdapterError:
    """``error`` carrying whose fault it was (``failure_class``) and the rule broken (``failure_rule``)."""
    error.failure_class = failure_class  # type: ignore[attr-defined]
    error.failure_rule = rule  # type: ignore[attr-defined]
    return error


def _earliest(*seconds: float | None) -> float | None:
    known = [s for s in seconds if s is not None]
    return min(known) if known else None


class A2AAgent:
    """A remote agent that speaks A2A, evaluated like a local one.

    ``url_or_card`` is the agent's base URL (its card is read from
    ``/.well-known/agent-card.json``), an a2a ``AgentCard``, or a card as a JSON dict. The agent
    is named after its card (read once, when the name is first needed) unless ``name`` is given.
    ``headers`` go with every request (e.g. ``{"Authorization": "Bearer ..."}``); credentials in
    the URL (``user:pass@host``, ``?token=...``) go with every request too. ``timeout`` bounds
    the whole run of one turn: the request, every wait between streamed events, polling a task
    still working, and waits a server asks for with ``Retry-After``. ``streaming=False`` asks
    for the final task only. ``card_timeout`` bounds reading the agent card as a whole (default: ``timeout``,
    at most 10 s), which is also read under ``RunConfig.max_response_bytes``. ``transport`` (``"JSONRPC"`` or ``"HTTP+JSON"``) forces one
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
        card_timeout: float | None = None,
    ) -> None:
        _require_a2a()
        from a2a.utils.constants import TransportProtocol

        self.headers = _checked_headers(headers)
        self._auth: tuple[str, str] | None = None
        self._params: list[tuple[str, str]] = []
        self._card: AgentCard | None = None
        self._card_error: CardReadError | None = None
        self._card_timeout: float | None = None
        self.card_timeout = card_timeout
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
        self._traffic = Traffic()

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
        if self._card is None and self._card_error is None:
            from ..._core.run.threads import run_coroutine

            try:
                run_coroutine(self._read_card_once())
            except CardReadError:
                return None  # kept: every run says it at once
            except Exception:  # the runs will say what is wrong with the server; the URL names it
                return None
        if self._card is None:
            return None
        # A card that echoes a credential must not name the agent in every record.
        return self.redact(self._card.name) if self._card.name else None

    @property
    def card_timeout(self) -> float:
        """Seconds the agent card may take to arrive, whole: a server that trickles it is cut there.

        ``A2AAgent(card_timeout=...)``; by default the agent's ``timeout``, at most 10 s. The CLI
        gives its ``--timeout``. The card is also read under ``RunConfig.max_response_bytes``."""
        if self._card_timeout is not None:
            return self._card_timeout
        return min(self.timeout or DEFAULT_CARD_SECONDS, DEFAULT_CARD_SECONDS)

    @card_timeout.setter
    def card_timeout(self, seconds: float | None) -> None:
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not 0 < seconds < float("inf")):
            raise ConfigError(f"A2AAgent(card_timeout={seconds!r}): give a number of seconds > 0, or None")
        self._card_timeout = seconds

    async def _read_card_once(self, http: Any = None) -> AgentCard:
        """The card, read under its bounds (a new client unless ``http`` is given: a run's, whose timeout bounds
        the read as a whole); a failure of a bound is kept and raised again at once (a card too slow or too large
        is not fetched by every run)."""
        import httpx

        if self._card_error is not None:
            raise CardReadError(str(self._card_error), error_type=self._card_error.error_type)
        try:
            if http is not None:
                self._card = await read_card(http, self.url, None)
            else:
                async with httpx.AsyncClient(**self._http_options(self.card_timeout),
                                             event_hooks={"response": [_acap_response]}) as client:
                    self._card = await read_card(client, self.url, self.card_timeout)
        except CardReadError as exc:
            self._card_error = CardReadError(self.redact(str(exc)), error_type=exc.error_type)
            raise self._card_error from None
        return self._card

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
                         every_version: bool = True, probe: bool = True) -> Any:
        """Check that this agent speaks A2A (its card, then probe messages): a ``Preflight`` table of
        checks; see :mod:`levelfield.adapters.a2a.preflight`. Sent with this agent's headers and URL
        credentials. ``every_version=False``: only the card's first JSON-RPC version is probed.
        ``probe=False``: the card only, no message sent (an evaluation's default: each probe is a task
        the agent runs; its own answers are checked instead, see :meth:`observed`)."""
        from .preflight import DEFAULT_PROMPT, _run

        if self._card_error is not None:  # the card was too slow or too large already: said at once
            raise CardReadError(str(self._card_error), error_type=self._card_error.error_type)
        try:
            found = await _run(self.url, self.headers, self._auth, self._params, prompt or DEFAULT_PROMPT,
                               timeout or min(self.timeout or 30.0, 30.0), every_version=every_version,
                               probe_messages=probe)
        except CardReadError as exc:
            self._card_error = CardReadError(self.redact(str(exc)), error_type=exc.error_type)
            raise self._card_error from None
        found.agent = self.name if self._name else (self.redact(found.agent) if found.agent else None)
        # A server may echo a credential into what the checks quote (an error body): never recorded.
        found.checks = [dataclasses.replace(c, detail=self.redact(c.detail)) for c in found.checks]
        return found

    def preflight(self, prompt: str | None = None, *, timeout: float | None = None, every_version: bool = True,
                  probe: bool = True) -> Any:
        """:meth:`apreflight` from sync code."""
        from ..._core.run.threads import run_coroutine

        return run_coroutine(self.apreflight(prompt, timeout=timeout, every_version=every_version, probe=probe))

    def observed(self) -> dict[str, Any]:
        """What this agent's answers so far showed (the passive preflight): ``{"checks": [...], "tool_calls": kind}``,
        the checks as ``Check.to_dict`` rows, credentials redacted; see :mod:`levelfield.adapters.a2a.traffic`."""
        card = self._card
        declared = card is None or any("tools" in skill.tags for skill in card.skills)
        checks = [dataclasses.replace(c, detail=self.redact(c.detail)) for c in self._traffic.checks(declared)]
        return {"checks": [dataclasses.asdict(c) for c in checks], "tool_calls": self._traffic.tool_calls}

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
                # one parked here closes the connections then, however the loop was started. The
                # loop's entry in _open holds it, so an agent dropped before its loop ends (a URL
                # wrapped inside evaluate()) leaves it alive for that; the agent's finaliser closes
                # it sooner where the loop goes on running.
                opened = _open.setdefault(loop, {})
                holder.closer = _close_at_loop_end(holder.http, opened)
                await holder.closer.__anext__()
                opened[id(holder.http)] = holder.closer
                weakref.finalize(self, _close_soon, weakref.ref(loop), holder.closer)
        return holder.client

    async def _connect(self) -> tuple[Client, Any]:
        import httpx
        from a2a.client import ClientConfig, ClientFactory
        from a2a.utils.constants import TransportProtocol

        http = httpx.AsyncClient(
            **self._http_options(self.timeout),
            # As many connections as the runner may have runs in flight.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256, keepalive_expiry=_KEEPALIVE),
            event_hooks={"response": [_acap_response]},
        )
        try:
            if self._card is None:
                await self._read_card_once(http)
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
            card = self._card
            assert card is not None  # read just above
            try:
                client = ClientFactory(config).create(card)
            except ValueError as exc:
                offered = sorted({i.protocol_binding for i in card.supported_interfaces}) or ["none"]
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
        try:
            return await self._run_turn(request, turn)
        except AdapterError as exc:  # what the answer broke, for the passive preflight
            self._traffic.failed(getattr(exc, "failure_class", None), getattr(exc, "failure_rule", None))
            raise

    async def _run_turn(self, request: AgentRequest, turn: _Turn) -> AgentOutput:
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
                if _busy(exc):
                    self._traffic.refused(wait)
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
        self._traffic.answered([p for chunks in turn.items.values() for chunk in chunks for p in chunk], turn.empty_parts)
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
        partial = self._output(turn) if turn.items else None
        return _exchange_error(exc, where=f"agent {self.name!r} at {self.url}", url=self.url, timeout=self.timeout,
                               progress=_progress(turn), partial=partial, redact=self.redact, retry_after=retry_after,
                               left=left)


_RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
_KEEPALIVE = 4.0
"""Seconds an idle connection is kept for the next call: under the 5 s after which uvicorn (levelfield's own
server), Node and Apache close one. At httpx's default, also 5 s, a call sent on a connection idle that long
could meet the server closing it ("Server disconnected without sending a response"), a run lost for nothing."""


class _LoopClient:
    """The a2a client and its httpx client for one event loop."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.client: Any = None
        self.http: Any = None
        self.closer: Any = None


_open: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, Any]] = weakref.WeakKeyDictionary()
"""Per event loop, the closers (``_close_at_loop_end``) of the httpx clients still open in it, by id of the client."""


async def _close_at_loop_end(http: Any, opened: dict[int, Any]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        opened.pop(id(http), None)
        if not http.is_closed:
            await http.aclose()


def _close_soon(loop_ref: weakref.ref[asyncio.AbstractEventLoop], closer: Any) -> None:
    """An agent's finaliser: its connections closed on their loop, if that loop still runs (else its
    end closes them: asyncio.run, or whoever calls the loop's shutdown_asyncgens)."""
    loop = loop_ref()
    if loop is None or loop.is_closed() or closer.ag_frame is None:  # gone, or the closer has run
        return
    try:
        loop.call_soon_threadsafe(lambda: loop.create_task(_aclose(closer)))
    except RuntimeError:  # closed meanwhile
        pass


async def _aclose(closer: Any) -> None:
    try:
        await closer.aclose()
    except RuntimeError:  # being closed already (the loop's end got there first)
        pass
