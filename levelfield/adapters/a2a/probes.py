"""The A2A preflight's probes: messages sent over raw JSON-RPC (A2A 1.0 and 0.3) and each answer
checked against the specification, one ``Check`` at a time (the answers are read by
``levelfield.adapters.a2a.answers``; the card is checked by ``levelfield.adapters.a2a.card``)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..._core.errors import AdapterError
from ..._core.run.failures import parse_retry_after
from .answers import (
    _AGENT_ERROR,
    _PROTOCOL_CODES,
    _events_of,
    _framing_error,
    _part_error,
    _shape_error,
    _sse_event,
    _task_event,
)
from .checks import (
    _KNOWN_STATES,
    INTERRUPTED,
    RUNNING,
    S_CANCEL,
    S_ERRORS,
    S_GET,
    S_JSONRPC,
    S_PARTS,
    S_SEND,
    S_STATES,
    S_STREAM,
    S_STREAM_EVENTS,
    TERMINAL,
    Check,
)

__all__: list[str] = []  # private to the preflight: _Prober


# -- the probes ---------------------------------------------------------------------------------------

_METHODS = {
    "1.0": {"send": "SendMessage", "stream": "SendStreamingMessage", "get": "GetTask", "cancel": "CancelTask"},
    "0.3": {"send": "message/send", "stream": "message/stream", "get": "tasks/get", "cancel": "tasks/cancel"},
}


def _message(prompt: str, version: str) -> dict[str, Any]:
    if version == "0.3":
        return {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex, "parts": [{"kind": "text", "text": prompt}]}
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": prompt}]}


class _Answer:
    """One JSON-RPC exchange as the server answered it."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: Mapping[str, str] = {}
        self.body: Any = None
        self.error: str | None = None
        """Why the answer is not a JSON-RPC response (transport or framing), when it is not."""
        self.timed_out = False
        """No answer within the preflight's timeout (a slow agent: nothing to judge)."""

    @property
    def rpc_error(self) -> dict[str, Any] | None:
        err = self.body.get("error") if isinstance(self.body, dict) else None
        return err if isinstance(err, dict) else None

    @property
    def result(self) -> Any:
        return self.body.get("result") if isinstance(self.body, dict) else None


def _too_large(exc: BaseException) -> Any:
    """The ``ResponseTooLarge`` in ``exc``'s chain (the size cap stopped a read), or None."""
    from .http import ResponseTooLarge, _chain

    return next((e for e in _chain(exc) if isinstance(e, ResponseTooLarge)), None)


async def within(seconds: float | None, awaitable: Any) -> Any:
    from .bounded import within as bounded

    return await bounded(seconds, awaitable)


class _Prober:
    def __init__(self, http: Any, url: str, timeout: float, prompt: str) -> None:
        self.http = http
        self.url = url
        self.timeout = timeout
        self.prompt = prompt
        self.checks: list[Check] = []
        self.busy: list[tuple[str, int, str | None]] = []
        """(what, HTTP status, Retry-After) of every 429/503 seen."""
        self.parts: list[dict[str, Any]] = []
        self.read_any = False
        self.slow: set[str] = set()
        """Versions whose send probe got no answer in time."""

    def add(self, name: str, status: str, section: str, detail: str = "", version: str = "") -> None:
        self.checks.append(Check(name, status, section, detail, version))

    def _note(self, what: str, response: Any) -> None:
        if response.status_code in (429, 503):
            self.busy.append((what, response.status_code, response.headers.get("retry-after")))

    async def rpc(self, version: str, method: str, params: Any, *, raw: bytes | None = None, rid: Any = None) -> _Answer:
        import httpx

        answer = _Answer()
        rid = rid if rid is not None else uuid.uuid4().hex[:8]
        headers = {"Content-Type": "application/json"}
        if version != "0.3":
            headers["A2A-Version"] = version
        request = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        content = raw if raw is not None else json.dumps(request).encode()
        for _ in range(3):
            try:
                # The whole answer within the timeout (httpx's bounds each wait for bytes, not the answer).
                response = await within(self.timeout, self.http.post(self.url, content=content, headers=headers))
            except (asyncio.TimeoutError, TimeoutError):
                answer.error = f"no complete answer within {self.timeout:g} s"
                answer.timed_out = True
                return answer
            except httpx.HTTPError as exc:
                answer.error = f"{type(exc).__name__}: {exc}"
                answer.timed_out = isinstance(exc, httpx.TimeoutException)
                return answer
            except Exception as exc:
                if (too_large := _too_large(exc)) is None:
                    raise
                answer.error = f"{too_large}; the read was stopped there"
                return answer
            self._note(method, response)
            wait = parse_retry_after(response.headers.get("retry-after")) if response.status_code in (429, 503) else None
            if wait is None or wait > min(self.timeout, 5.0):
                break
            await asyncio.sleep(wait)  # a busy server that says when: wait as asked, as an evaluation would
        answer.status, answer.headers = response.status_code, response.headers
        try:
            answer.body = response.json()
        except ValueError:
            answer.error = f"HTTP {response.status_code}, the body is not JSON ({response.text[:80]!r})"
            return answer
        if raw is None:
            answer.error = _framing_error(answer.body, rid)
        return answer

    async def stream(self, version: str, params: Any) -> tuple[list[tuple[Any, str | None]], str | None, int | None]:
        """Each streamed JSON-RPC result with its framing error; why the stream could not be read; HTTP status."""
        import httpx

        rid = uuid.uuid4().hex[:8]
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if version != "0.3":
            headers["A2A-Version"] = version
        body = {"jsonrpc": "2.0", "id": rid, "method": _METHODS[version]["stream"], "params": params}
        out: list[tuple[Any, str | None]] = []

        async def read() -> tuple[str | None, int | None]:
            async with self.http.stream("POST", self.url, json=body, headers=headers) as response:
                self._note("stream", response)
                kind = response.headers.get("content-type", "")
                if response.status_code != 200 or not kind.startswith("text/event-stream"):
                    text = (await response.aread()).decode(errors="replace")[:200]
                    return f"HTTP {response.status_code} {kind or 'no content type'}: {text}", response.status_code
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif not line.strip() and data:
                        out.append(_sse_event("\n".join(data), rid))
                        data = []
                if data:
                    out.append(_sse_event("\n".join(data), rid))
            return None, 200

        try:
            broken, status = await within(self.timeout, read())  # the whole stream within the timeout
        except (asyncio.TimeoutError, TimeoutError, httpx.TimeoutException):
            return out, TIMED_OUT, None
        except httpx.HTTPError as exc:
            return out, f"the stream broke: {type(exc).__name__}: {exc}", None
        except Exception as exc:
            if (too_large := _too_large(exc)) is None:
                raise
            return out, f"{too_large}; the read was stopped there", None
        return out, broken, status

    # -- one protocol version over JSON-RPC -----------------------------------------------------------
    async def probe(self, version: str, streaming: bool) -> None:
        v = version
        send = await self.rpc(v, _METHODS[v]["send"], {"message": _message(self.prompt, v)})
        if send.status in (401, 403):
            # Not the server's fault, and nothing can be judged without: say what to pass.
            raise AdapterError(f"A2A preflight of {self.url}: HTTP {send.status}, the server refused the probe message; "
                               "pass its credentials (A2AAgent(headers=...), a2a-check --header 'Authorization: Bearer ...')",
                               error_type="unauthorized")
        task_id, states = await self._check_send(send, v)
        if task_id:
            await self._check_get(v, task_id, states[-1] if states else None)
        if streaming and v in self.slow:
            self.add("stream", "skip", S_STREAM, "skipped: the send probe got no answer in time", v)
        elif streaming:
            await self._check_stream(v)
        else:
            self.add("stream", "skip", S_STREAM, "the card does not claim streaming (capabilities.streaming)", v)
        await self._check_cancel(v)
        await self._check_errors(v)

    async def _check_send(self, send: _Answer, v: str) -> tuple[str | None, list[str]]:
        if send.status in (429, 503):
            self.add("send", "fail", S_SEND, f"HTTP {send.status}: the server refused the probe as busy", v)
            return None, []
        if send.timed_out:
            self.slow.add(v)
            self.add("send", "warn", S_SEND, f"no answer within {self.timeout:g} s (a slow agent?): the checks of "
                     "the answer were skipped; raise the timeout to judge them", v)
            return None, []
        if send.rpc_error is not None and send.rpc_error.get("code") not in _PROTOCOL_CODES and not send.error:
            # A JSON-RPC error is a conformant answer: the agent reported a failure of its own.
            self.add("send", "warn", S_SEND, f"the agent answered the probe with error {send.rpc_error.get('code')} "
                     f"({send.rpc_error.get('message')}): a conformant answer, but the checks of a task were skipped", v)
            return None, []
        if send.error or send.rpc_error:
            said = send.error or f"JSON-RPC error {(send.rpc_error or {}).get('code')}: {(send.rpc_error or {}).get('message')}"
            self.add("send", "fail", S_SEND if send.rpc_error else S_JSONRPC,
                     f"a well-formed probe message was not answered with a task or message: {said}", v)
            return None, []
        problem = _shape_error(send.result, v, streaming=False)
        events = _events_of(send.result, v)
        if problem or not events:
            self.add("send", "fail", S_SEND, f"the answer is not a valid task or message: {problem or 'no task, no message'}", v)
            return None, []
        self.read_any = True
        event = events[0]
        self.add("send", "pass", S_SEND, f"answered with a {event.kind}" + (f" ({event.state})" if event.state else ""), v)
        self._check_parts("send.parts", [p for e in events for p in e.parts], v)
        states = [event.state] if event.state else []
        if event.kind == "task":
            states = await self._poll(v, event.task_id, states)
            self._check_final("send.final_state", states, v, "the task")
        return event.task_id, states

    async def _poll(self, v: str, task_id: str | None, states: list[str]) -> list[str]:
        """Follow a task answered as still running with GetTask until it ends or the timeout passes."""
        deadline = time.monotonic() + self.timeout
        while task_id and states and states[-1] in RUNNING and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            got = await self.rpc(v, _METHODS[v]["get"], {"id": task_id})
            task = _task_event(got.result, v) if not (got.error or got.rpc_error) else None
            if task is None or task.state is None:
                break
            if task.state != states[-1]:
                states.append(task.state)
            self.parts += task.parts
        return states

    def _check_final(self, name: str, states: list[str], v: str, what: str, polled: bool = True) -> None:
        if not states:
            self.add(name, "fail", S_STATES, f"{what} carries no state", v)
            return
        unknown = [s for s in states if s not in _KNOWN_STATES]
        if unknown:
            self.add(name, "fail", S_STATES, f"{what} has state {unknown[0]!r}, which is no A2A task state", v)
            return
        bad_order = next((i for i in range(1, len(states)) if states[i - 1] in TERMINAL and states[i] != states[i - 1]), None)
        if bad_order is not None:
            self.add(name, "fail", S_STATES, f"{what} left the final state {states[bad_order - 1]} for {states[bad_order]}: "
                     "a task in a terminal state cannot change", v)
            return
        last = states[-1]
        seen = " -> ".join(states)
        if last in TERMINAL:
            self.add(name, "pass", S_STATES, f"states {seen}", v)
        elif last in INTERRUPTED:
            self.add(name, "warn", S_STATES, f"states {seen}: the task stopped to ask for {last.split('-')[0]}", v)
        else:
            when = f"within {self.timeout:g} s of polling GetTask" if polled else "before the stream ended"
            self.add(name, "fail", S_STATES, f"states {seen}: the task never reached a final state ({when})", v)

    def _check_parts(self, name: str, parts: list[dict[str, Any]], v: str) -> None:
        self.parts += parts
        bad = next((e for e in (_part_error(p, v) for p in parts) if e), None)
        if bad:
            self.add(name, "fail", S_PARTS, bad, v)
        elif not parts:
            self.add(name, "warn", S_PARTS, "the answer has no parts: no text, no data, nothing to score", v)
        else:
            self.add(name, "pass", S_PARTS, f"{len(parts)} part(s), each of one kind", v)

    async def _check_get(self, v: str, task_id: str, state: str | None) -> None:
        got = await self.rpc(v, _METHODS[v]["get"], {"id": task_id})
        if got.error or got.rpc_error:
            said = got.error or f"JSON-RPC error {(got.rpc_error or {}).get('code')}: {(got.rpc_error or {}).get('message')}"
            self.add("get_task", "fail", S_GET, f"the task just answered could not be read back: {said}", v)
            return
        task = _task_event(got.result, v)
        if task is None or task.task_id != task_id:
            self.add("get_task", "fail", S_GET, "GetTask did not answer with the task asked for", v)
        elif state in TERMINAL and task.state != state:
            self.add("get_task", "fail", S_GET, f"the task ended {state} but GetTask says {task.state}", v)
        else:
            self.add("get_task", "pass", S_GET, f"the task read back ({task.state})", v)

    async def _check_stream(self, v: str) -> None:
        events_raw, broken, status = await self.stream(v, {"message": _message(self.prompt, v)})
        if broken == TIMED_OUT:
            self.add("stream", "warn", S_STREAM, f"the stream was still going after {self.timeout:g} s "
                     f"({len(events_raw)} event(s)): its final state was not judged; raise the timeout to judge it", v)
            return
        agent_error = next((e for _, e in events_raw if e and e.startswith(_AGENT_ERROR)), None)
        if agent_error is not None:
            self.add("stream", "warn", S_STREAM, f"{agent_error}: a conformant answer, but the checks of a task "
                     "were skipped", v)
            return
        if broken is not None and not events_raw:
            self.add("stream", "fail", S_STREAM, f"the card claims streaming but the stream was not served: {broken}", v)
            return
        framing = next((e for _, e in events_raw if e), None)
        shape = next((s for s in (_shape_error(r, v, streaming=True) for r, e in events_raw if not e) if s), None)
        if framing or shape:
            self.add("stream.events", "fail", S_STREAM_EVENTS, framing or shape or "", v)
            return
        events = [e for r, _ in events_raw for e in _events_of(r, v)]
        if not events:
            self.add("stream", "fail", S_STREAM, "the stream ended without any event", v)
            return
        self.read_any = True
        self.add("stream", "pass", S_STREAM, f"{len(events)} event(s)" + (f"; then {broken}" if broken else ""), v)
        if events[0].kind not in ("task", "message"):
            self.add("stream.first_event", "warn", S_STREAM_EVENTS, f"the first event is a {events[0].kind} update, "
                     "not the task or message it belongs to", v)
        missing = next((e for e in events if e.kind == "status" and e.state is None), None)
        if missing is not None:
            self.add("stream.status", "fail", S_STREAM_EVENTS, "a status update carries no status.state", v)
        self._check_parts("stream.parts", [p for e in events for p in e.parts], v)
        if events[0].kind == "message" and len(events) == 1:
            self.add("stream.final_state", "pass", S_STATES, "answered with a message (no task)", v)
            return
        states: list[str] = []
        for event in events:
            if event.state and (not states or states[-1] != event.state):
                states.append(event.state)
        if any(e.kind == "message" for e in events) and len(events) > 1:
            self.add("stream.final_state", "fail", S_STREAM_EVENTS, "a message came with task events in one stream", v)
        else:
            self._check_final("stream.final_state", states, v, "the streamed task", polled=False)

    async def _check_cancel(self, v: str) -> None:
        got = await self.rpc(v, _METHODS[v]["cancel"], {"id": f"levelfield-no-such-task-{uuid.uuid4().hex[:8]}"})
        if got.error:
            self.add("cancel", "fail", S_JSONRPC, f"cancelling an unknown task: {got.error}", v)
        elif got.rpc_error is None:
            self.add("cancel", "fail", S_CANCEL, "cancelling a task that does not exist was answered with a result, "
                     "not TaskNotFoundError", v)
        elif got.rpc_error.get("code") == -32001:
            self.add("cancel", "pass", S_CANCEL, "an unknown task is TaskNotFoundError (-32001)", v)
        else:
            self.add("cancel", "warn", S_CANCEL, f"an unknown task is error {got.rpc_error.get('code')} "
                     f"({got.rpc_error.get('message')}), expected TaskNotFoundError (-32001)", v)

    async def _check_errors(self, v: str) -> None:
        wrong: list[str] = []
        result_for_bad: list[str] = []
        cases: list[tuple[str, int, dict[str, Any]]] = [
            ("unknown method", -32601, dict(method="levelfield/no-such-method", params={})),
            ("invalid params", -32602, dict(method=_METHODS[v]["send"], params={"message": "not a message"})),
            ("invalid JSON", -32700, dict(method="", params=None, raw=b"{not json")),
        ]
        for what, code, kwargs in cases:
            got = await self.rpc(v, **kwargs)
            if got.body is None:
                wrong.append(f"{what}: {got.error}")
            elif got.rpc_error is None:
                result_for_bad.append(what)
            elif got.rpc_error.get("code") != code and not (code == -32602 and got.rpc_error.get("code") == -32600):
                wrong.append(f"{what}: error {got.rpc_error.get('code')}, expected {code}")
        if result_for_bad:
            self.add("errors", "fail", S_ERRORS, f"a bad request ({', '.join(result_for_bad)}) was answered with a "
                     "result instead of a JSON-RPC error: an error reported as success", v)
        elif wrong:
            self.add("errors", "warn", S_ERRORS, "; ".join(wrong), v)
        else:
            self.add("errors", "pass", S_ERRORS, "unknown method -32601, invalid params -32602, invalid JSON -32700", v)


TIMED_OUT = "timed out"
