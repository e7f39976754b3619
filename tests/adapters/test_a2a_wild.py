"""A2AAgent against servers that misbehave the way real ones do, and the credentials it must never record.

The faulty servers are written on raw sockets (asyncio streams on 127.0.0.1, port 0): they serve
a real levelfield agent card, then answer each POST the way a test asks (429 with Retry-After,
a body cut off, keep-alives only, a task left working, a null result, an echo of the headers).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

from a2a.server.request_handlers.response_helpers import agent_card_to_dict  # noqa: E402

import levelfield as lf  # noqa: E402
from levelfield._core.data.protocol import AgentRequest  # noqa: E402
from levelfield._core.data.types import AgentOutput  # noqa: E402
from levelfield._core.errors import ConfigError, LevelfieldError  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.server import build_agent_card, start_server  # noqa: E402

# The adapter is under test here; the preflight before the first case has tests of its own.
FAST = {"progress": False, "retries": 0, "timeout": 30, "a2a_preflight": False}
TOKEN = "s3cret-token-9f8e"


class Request:
    """One HTTP request the raw server read."""

    def __init__(self, method: str, target: str, headers: dict[str, str], body: bytes, at: float) -> None:
        self.method, self.target, self.headers, self.body, self.at = method, target, headers, body, at
        self.json: Any = json.loads(body) if body else None

    @property
    def rpc_method(self) -> str | None:
        return self.json.get("method") if isinstance(self.json, dict) else None


Handler = Callable[[Request, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """An HTTP/1.1 server on raw sockets: the agent card on GET, ``handler`` for everything else."""

    def __init__(self, handler: Handler, *, streaming: bool = True, name: str = "raw-agent") -> None:
        self.handler = handler
        self.streaming = streaming
        self.name = name
        self.requests: list[Request] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.url = ""

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
            self._ready.set()
            loop.run_forever()
            # Stopped (__exit__): the listening socket and every connection closed, each connection's
            # task ended (its writer closed) and their sockets released before the loop closes.
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(self._server.wait_closed())
            loop.run_until_complete(asyncio.sleep(0))  # the transports' connection_lost callbacks
        finally:
            self._ready.set()
            loop.close()

    def __enter__(self) -> RawServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, target, _ = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, value = raw.decode().split(":", 1)
                    headers[key.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                request = Request(method, target, headers, body, time.monotonic())
                if method == "GET" and target.split("?")[0] == "/.well-known/agent-card.json":
                    card = agent_card_to_dict(build_agent_card(self.name, self.url, streaming=self.streaming))
                    await send_json(writer, card)
                    continue
                self.requests.append(request)
                await self.handler(request, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


async def send_json(writer: asyncio.StreamWriter, payload: Any, *, status: str = "200 OK", headers: dict[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    head = {"Content-Type": "application/json", "Content-Length": str(len(body)), **(headers or {})}
    writer.write(f"HTTP/1.1 {status}\r\n".encode() + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode() + b"\r\n" + body)
    await writer.drain()


def rpc(request: Request, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json["id"], "result": result}


def completed_task(text: str = "All lights are off.") -> dict[str, Any]:
    return {
        "task": {
            "id": "t1",
            "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a1", "parts": [{"text": text}]}],
        }
    }


def agent_message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": list(parts)}}


def _run(agent: Any, **kwargs: Any) -> lf.AgentRun:
    dataset = lf.load_dataset([{"case_id": "c1", "prompt": "Schalte alle Lichter aus."}])
    return lf.evaluate(dataset, agent, metrics=[], **{**FAST, **kwargs}).runs[0]


@pytest.fixture
def raw_server() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def start(handler: Handler, **kwargs: Any) -> RawServer:
        server = RawServer(handler, **kwargs).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__()


# -- 429 / 503 with Retry-After -------------------------------------------------------------------


def test_429_with_retry_after_is_waited_out_and_the_run_succeeds(raw_server):
    async def busy_once(request: Request, writer: asyncio.StreamWriter) -> None:
        if len(server.requests) == 1:
            await send_json(writer, {"error": "slow down"}, status="429 Too Many Requests", headers={"Retry-After": "1"})
        else:
            await send_json(writer, rpc(request, completed_task()))

    server = raw_server(busy_once, streaming=False)
    run = _run(A2AAgent(server.url, timeout=10))
    assert not run.failure, run.error
    assert run.output.response == "All lights are off."
    first, second = server.requests
    assert second.at - first.at >= 0.9  # the client waited the second the server asked for


def test_retry_after_longer_than_the_timeout_fails_at_once_saying_so(raw_server):
    async def busy(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, {"error": "come back later"}, status="503 Service Unavailable", headers={"Retry-After": "120"})

    server = raw_server(busy, streaming=False)
    run = _run(A2AAgent(server.url, timeout=5))
    assert run.failure and run.error_type == "rate_limited"
    assert "retry after 120 s" in run.error and "timeout=5" in run.error
    assert len(server.requests) == 1


def test_a_retry_after_beyond_the_budget_is_not_retried_by_the_runner_either(raw_server):
    async def busy(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, {"error": "quota"}, status="429 Too Many Requests", headers={"Retry-After": "3600"})

    server = raw_server(busy, streaming=False)
    run = _run(A2AAgent(server.url, timeout=5), retries=2, backoff=0.01)
    assert run.failure and run.error_type == "rate_limited" and "3600 s" in run.error
    assert len(server.requests) == 1 and run.attempts == 1  # not asked again a moment later


def test_the_runners_timeout_is_the_budget_of_an_agent_without_its_own(raw_server):
    async def busy(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, {}, status="503 Service Unavailable", headers={"Retry-After": "30"})

    server = raw_server(busy, streaming=False)
    run = _run(A2AAgent(server.url, timeout=None), timeout=3)
    assert run.failure and run.error_type == "rate_limited"  # said at once, not a timeout 3 s later
    assert "retry after 30 s" in run.error and len(server.requests) == 1


def test_retry_after_as_an_http_date_is_understood(raw_server):
    async def busy_once(request: Request, writer: asyncio.StreamWriter) -> None:
        if len(server.requests) == 1:
            from email.utils import formatdate

            when = formatdate(time.time() + 3600, usegmt=True)  # an hour: more than the run may wait
            await send_json(writer, {}, status="429 Too Many Requests", headers={"Retry-After": when})
        else:
            await send_json(writer, rpc(request, completed_task()))

    server = raw_server(busy_once, streaming=False)
    run = _run(A2AAgent(server.url, timeout=5))
    assert run.failure and run.error_type == "rate_limited" and "retry after 3" in run.error


# -- broken connections ------------------------------------------------------------------------


def test_a_body_cut_off_mid_way_is_a_lost_connection_not_a_failure_to_connect(raw_server):
    async def cut(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"jsonrpc\": \"2.0\", ")
        await writer.drain()
        writer.close()

    server = raw_server(cut, streaming=False)
    run = _run(A2AAgent(server.url))
    assert run.failure and run.error_type == "connection_lost"
    assert "broke before the answer was complete" in run.error and "cannot connect" not in run.error


def test_a_connection_closed_without_an_answer_says_so_not_a_stray_loop_error(raw_server):
    # What a client sees when the server closes an idle keep-alive connection just as a request goes out on
    # it. The message named "(RuntimeError: no running event loop)" as the cause: run_coroutine started the
    # evaluation inside the except block of its loop check, and every exception raised in a task took that
    # RuntimeError as its __context__ (about 1 in 20 busy runs of bench/bench_limits_64_behind_8.py).
    async def close(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = raw_server(close, streaming=False)
    run = _run(A2AAgent(server.url))
    assert run.failure and run.error_type == "connection_lost"
    assert "disconnected without sending a response" in run.error, run.error
    assert "no running event loop" not in run.error, run.error


def test_the_agents_connections_expire_before_a_uvicorn_server_closes_them(raw_server):
    # httpx keeps an idle connection 5 s by default, as long as uvicorn (levelfield's own A2A server) keeps it
    # open: a request sent on it at about 5 s met the server closing it ("Server disconnected without sending
    # a response"). Expired sooner, the pool opens a new connection instead.
    import uvicorn

    server = raw_server(lambda request, writer: send_json(writer, rpc(request, completed_task())), streaming=False)
    agent = A2AAgent(server.url)

    async def expiry() -> float:
        _, http = await agent._connect()
        try:
            return http._transport._pool._keepalive_expiry
        finally:
            await http.aclose()

    assert asyncio.run(expiry()) < uvicorn.Config(app=None).timeout_keep_alive


# -- answers larger than the cap ---------------------------------------------------------------

CAP = 1 << 20  # small caps in tests: the behaviour is the same at the 32 MB default


def test_an_answer_over_the_cap_fails_as_response_too_large_and_is_not_recorded(raw_server, tmp_path):
    async def big(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task("Größe 大小 " * 300_000)))  # ~3.6 MB

    server = raw_server(big, streaming=False)
    dataset = lf.load_dataset([{"case_id": "c1", "prompt": "Wie groß?"}])
    run = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], out=str(tmp_path), max_response_bytes=CAP, **FAST).runs[0]
    assert run.failure and run.error_type == "response_too_large"
    assert "larger than 1 MB" in run.error and "max_response_bytes" in run.error
    assert (tmp_path / "runs.jsonl").stat().st_size < 50_000  # the answer is not in the journal


async def _endless_body(writer: asyncio.StreamWriter, head: bytes, chunk: bytes) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n" + head + b"Transfer-Encoding: chunked\r\n\r\n")
    while True:  # never ends: only a cap counted while reading stops it before the timeout
        writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        await writer.drain()


def test_a_streamed_answer_over_the_cap_is_stopped_while_it_is_read(raw_server):
    async def endless(request: Request, writer: asyncio.StreamWriter) -> None:
        await _endless_body(writer, b"Content-Type: text/event-stream\r\n", b'data: {"x": "' + b"y" * 65536)

    run = _run(A2AAgent(raw_server(endless).url, timeout=20), max_response_bytes=CAP)
    assert run.failure and run.error_type == "response_too_large", run.error


def test_an_unannounced_body_over_the_cap_is_stopped_while_it_is_read(raw_server):
    async def endless(request: Request, writer: asyncio.StreamWriter) -> None:
        await _endless_body(writer, b"Content-Type: application/json\r\n", b" " * 65536)

    run = _run(A2AAgent(raw_server(endless, streaming=False).url, timeout=20), max_response_bytes=CAP)
    assert run.failure and run.error_type == "response_too_large", run.error


def test_an_answer_under_the_cap_is_read_whole(raw_server):
    text = "Olá, 世界! " * 30_000  # ~0.7 MB as JSON (\\u escapes)

    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task(text)))

    run = _run(A2AAgent(raw_server(ok, streaming=False).url), max_response_bytes=CAP)
    assert not run.failure, run.error
    assert run.output.response == text


def test_the_cli_takes_the_cap_as_max_response(raw_server, tmp_path):
    from levelfield._core.results.record import read_record
    from levelfield.cli import main

    async def big(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task("résumé " * 200_000)))

    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"case_id": "c1", "prompt": "Resümee?", "reference": "résumé"}) + "\n", encoding="utf-8")
    url = raw_server(big, streaming=False).url
    main(["eval", str(data), "--agent", url, "--out", str(tmp_path / "out"), "--max-response", "1MB", "--quiet",
          "--retries", "0", "-m", "exact_match", "--allow-failures"])
    [(run, _)] = read_record(tmp_path / "out").runs.values()
    assert run.error_type == "response_too_large"


def test_max_response_bytes_must_be_a_positive_whole_number():
    with pytest.raises(ConfigError, match="max_response_bytes"):
        lf.RunConfig(max_response_bytes=0)
    assert lf.RunConfig(max_response_bytes=None).max_response_bytes is None


# -- the timeout bounds the whole turn -----------------------------------------------------------


def test_a_stream_of_keep_alives_only_ends_at_the_agent_timeout(raw_server):
    async def keep_alive(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:  # an SSE comment every 50 ms: each resets a per-read timeout, never the turn's
            writer.write(b"e\r\n: keep-alive\n\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)

    server = raw_server(keep_alive)
    run = _run(A2AAgent(server.url, timeout=0.5))
    assert run.failure and run.error_type == "timeout"
    # The adapter's bound of the whole turn ended it, not the run's own 30 s timeout (FAST) the keep-alives would reach.
    assert "no complete answer within 0.5 s" in run.error and "whole turn" in run.error, run.error


@pytest.mark.slow  # waits out a 3 s agent timeout
def test_a_task_left_working_is_polled_until_the_agent_timeout(raw_server):
    working = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}

    async def stuck(request: Request, writer: asyncio.StreamWriter) -> None:
        if request.rpc_method == "SendMessage":
            await send_json(writer, rpc(request, {"task": working}))
        else:
            await send_json(writer, rpc(request, working))

    server = raw_server(stuck, streaming=False)
    run = _run(A2AAgent(server.url, timeout=3))
    polls = [r for r in server.requests if r.rpc_method == "GetTask"]
    assert polls  # it did poll (every 0.25 s), and then gave up
    assert run.failure and run.error_type == "timeout" and "task working" in run.error


# -- connections that fail: what happened and what to check ---------------------------------------


def test_a_server_that_accepts_and_never_answers_is_a_timeout_saying_so():
    import socket

    with socket.socket() as listener:  # the kernel accepts connections into the backlog; nobody answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        run = _run(A2AAgent(f"http://127.0.0.1:{port}", timeout=0.5))
    assert run.failure and run.error_type == "timeout"
    assert "answer within 0.5 s" in run.error and "did not answer" in run.error


def test_https_to_a_plain_http_server_is_a_tls_error_saying_what_to_check():
    import socket

    def plain_http(listener: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        threading.Thread(target=plain_http, args=(listener,), daemon=True).start()
        run = _run(A2AAgent(f"https://127.0.0.1:{listener.getsockname()[1]}", timeout=5))
    assert run.failure and run.error_type == "tls_error", run.error
    assert "TLS handshake failed" in run.error and "https://" in run.error and "RuntimeError" not in run.error


def _raised(error: BaseException, cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise error from inner
    except BaseException as outer:
        return outer


def test_a_name_that_does_not_resolve_is_a_dns_error_naming_the_host():
    import socket

    import httpx

    from levelfield.adapters.a2a.http import _chain, _connection_error

    exc = _raised(httpx.ConnectError("[Errno -2] Name or service not known"), socket.gaierror(-2, "Name or service not known"))
    error = _connection_error("agent 'a'", "http://nonexistent.invalid", 5, _chain(exc), None)
    assert error.error_type == "dns_error" and "'nonexistent.invalid' could not be resolved" in str(error)
    assert getattr(error, "transient", False)


def test_a_connection_that_times_out_is_a_connect_timeout_naming_host_and_port():
    import httpx

    from levelfield.adapters.a2a.http import _chain, _connection_error

    exc = _raised(httpx.ConnectTimeout("timed out"), TimeoutError("timed out"))
    error = _connection_error("agent 'a'", "https://10.255.255.1", 3, _chain(exc), None)
    assert error.error_type == "connect_timeout" and "no connection within 3 s" in str(error)
    assert "10.255.255.1:443 is reachable" in str(error)


# -- answers that are not what a client expects -------------------------------------------------


def test_a_null_result_is_a_bad_response_failure_not_a_type_error(raw_server):
    async def null(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, None))

    run = _run(A2AAgent(raw_server(null, streaming=False).url))
    assert run.failure and run.error_type == "bad_response"
    assert "not a valid A2A response" in run.error


def test_a_reply_with_only_a_data_part_has_its_json_as_the_response(raw_server):
    async def data(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, agent_message({"data": {"温度": 21, "unit": "°C"}})))

    run = _run(A2AAgent(raw_server(data, streaming=False).url))
    assert not run.failure, run.error
    assert json.loads(run.output.response) == {"温度": 21, "unit": "°C"}
    assert "温度" in run.output.response  # kept readable, not \u-escaped


def test_a_reply_with_neither_text_nor_data_is_an_empty_response_failure(raw_server):
    call = {"data": {"name": "lights_off", "args": {}}, "metadata": {"adk_type": "function_call"}}

    async def nothing(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, agent_message(call)))

    run = _run(A2AAgent(raw_server(nothing, streaming=False).url))
    assert run.failure and run.error_type == "empty_response"
    assert [c.tool_name for c in run.partial_output.trajectory] == ["lights_off"]


def test_an_empty_text_answer_is_an_answer_not_a_failure():
    with start_server(lambda prompt: "") as server:
        run = _run(A2AAgent(server.url))
    assert not run.failure, run.error
    assert run.output.response == ""


# -- credentials ---------------------------------------------------------------------------------


def test_a_header_value_with_a_trailing_newline_is_refused_without_showing_it():
    with pytest.raises(ConfigError) as caught:
        A2AAgent("http://127.0.0.1:1", headers={"Authorization": f"Bearer {TOKEN}\n"})
    assert "'Authorization'" in str(caught.value) and TOKEN not in str(caught.value)
    assert isinstance(caught.value, LevelfieldError)


def test_a_non_ascii_header_value_is_refused_naming_the_header_not_the_value():
    with pytest.raises(ConfigError, match="'X-Team'.*ASCII") as caught:
        A2AAgent("http://127.0.0.1:1", headers={"X-Team": "Größe 好"})
    assert "Größe" not in str(caught.value)


def test_a_non_string_header_value_is_a_type_error_naming_the_header():
    with pytest.raises(TypeError, match="X-Api-Key"):
        A2AAgent("http://127.0.0.1:1", headers={"X-Api-Key": 12345})


def test_a_server_echoing_the_headers_in_a_500_is_recorded_redacted(raw_server, tmp_path):
    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, {"error": "boom", "your_headers": request.headers}, status="500 Internal Server Error")

    server = raw_server(echo, streaming=False)
    run = _run(A2AAgent(server.url, headers={"Authorization": f"Bearer {TOKEN}"}))
    assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"  # it was sent
    assert run.failure and run.error_type == "http_error" and "HTTP 500" in run.error
    assert TOKEN not in run.error and "***" in run.error


def test_a_server_echoing_a_credential_into_its_answer_is_recorded_redacted(raw_server):
    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task(f"you sent {request.headers['x-api-key']}")))

    run = _run(A2AAgent(raw_server(echo, streaming=False).url, headers={"X-Api-Key": TOKEN}))
    assert run.output.response == "you sent ***"


def test_credentials_in_the_url_are_sent_but_never_name_the_agent(raw_server):
    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, {"saw": request.target, "auth": request.headers.get("authorization")}, status="500 Oops")

    server = raw_server(echo, streaming=False)
    port = server.url.rsplit(":", 1)[1]
    agent = A2AAgent(f"http://alice:pa55-w0rd@127.0.0.1:{port}/?token=t0ken-abc", name=None)
    run = _run(agent)
    sent = server.requests[0]
    assert "token=t0ken-abc" in sent.target and sent.headers["authorization"].startswith("Basic ")
    assert agent.url == server.url and "pa55-w0rd" not in repr(agent)
    for text in (run.error, run.agent_name):
        assert "pa55-w0rd" not in text and "t0ken-abc" not in text and "alice" not in text


def _written_text(path):
    """A written file's text; a Parquet table's cells as text (its bytes are compressed)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return str(pq.read_table(path).to_pylist())
    return path.read_text(encoding="utf-8")


def test_no_credential_reaches_any_file_an_evaluation_writes(raw_server, tmp_path):
    async def echo_then_answer(request: Request, writer: asyncio.StreamWriter) -> None:
        if request.json["params"]["message"]["metadata"]["levelfield"]["case_id"] == "bad":
            await send_json(writer, {"echo": request.headers, "url": request.target}, status="500 Internal Server Error")
        else:
            await send_json(writer, rpc(request, completed_task(f"echo {request.headers['authorization']}")))

    server = raw_server(echo_then_answer, streaming=False)
    port = server.url.rsplit(":", 1)[1]
    agent = A2AAgent(f"http://carol:pa55-w0rd@127.0.0.1:{port}/?token=t0ken-abc", headers={"X-Api-Key": TOKEN})
    dataset = lf.load_dataset([{"case_id": "bad", "prompt": "坏"}, {"case_id": "good", "prompt": "好"}])
    result = lf.evaluate(dataset, agent, metrics=["exact_match"], out=str(tmp_path), **FAST)
    result.metrics_table.to_csv(tmp_path / "table.csv")
    assert [r.failure for r in result.runs] == [True, False]
    written = "".join(_written_text(f) for f in tmp_path.rglob("*") if f.is_file())
    assert "bad" in written and "***" in written
    basic = base64.b64encode(b"carol:pa55-w0rd").decode()  # the Authorization the URL's user:pass became
    for secret in (TOKEN, "pa55-w0rd", "t0ken-abc", basic):
        assert secret not in written


def test_a_header_that_is_no_credential_never_rewrites_the_answer(raw_server):
    async def answer(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task("ok thing, 好东西")))

    agent = A2AAgent(raw_server(answer, streaming=False).url, headers={"X-Tag": "thing", "X-Team": "ok"})
    dataset = lf.load_dataset([{"case_id": "c1", "prompt": "Wie geht's?", "reference": "ok thing, 好东西"}])
    result = lf.evaluate(dataset, agent, metrics=["exact_match"], **FAST)
    assert result.runs[0].output.response == "ok thing, 好东西"
    assert result.summary_metrics["exact_match/mean"] == 1.0


def test_short_url_credentials_are_redacted_where_echoed_and_nothing_else_is(raw_server):
    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        said = f"saw {request.target} {request.headers['authorization']}; pw and abc, not pwd or abcdef; tenant=acme"
        await send_json(writer, rpc(request, completed_task(said)))

    server = raw_server(echo, streaming=False)
    port = server.url.rsplit(":", 1)[1]
    run = _run(A2AAgent(f"http://me:pw@127.0.0.1:{port}/?token=abc&tenant=acme"))
    assert server.requests[0].target == "/?token=abc&tenant=acme"  # sent as given
    assert run.output.response == "saw /?token=***&tenant=acme Basic ***; *** and ***, not pwd or abcdef; tenant=acme"


def test_a_bearer_token_echoed_alone_or_inside_a_word_is_redacted(raw_server):
    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        token = request.headers["authorization"].split()[1]
        await send_json(writer, rpc(request, completed_task(f"令牌 {token}, glued:x{token}y")))

    run = _run(A2AAgent(raw_server(echo, streaming=False).url, headers={"Authorization": f"Bearer {TOKEN}"}))
    assert run.output.response == "令牌 ***, glued:x***y"


def test_a_card_name_echoing_a_credential_does_not_name_the_agent(raw_server):
    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task()))

    server = raw_server(ok, streaming=False, name="agent for k3y")
    port = server.url.rsplit(":", 1)[1]
    agent = A2AAgent(f"http://127.0.0.1:{port}/?api_key=k3y")
    assert agent.name == "agent for ***"
    assert _run(agent).agent_name == "agent for ***"


def test_url_user_info_and_an_authorization_header_together_are_refused():
    with pytest.raises(ConfigError, match="user:password@.*Authorization") as caught:
        A2AAgent("http://me:pw@127.0.0.1:1", headers={"authorization": f"Bearer {TOKEN}"})
    assert TOKEN not in str(caught.value) and "pw" not in str(caught.value)


@pytest.mark.slow  # the CLI in a subprocess, interrupted
def test_the_ctrl_c_resume_hint_shows_no_url_credential(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    def slow(prompt: str) -> str:
        time.sleep(0.2)
        return prompt

    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"case_id": f"c{i}", "prompt": f"第{i}", "reference": f"第{i}"}) + "\n" for i in range(40)), encoding="utf-8")
    out = tmp_path / "out"
    with start_server(slow, name="slow") as server:
        port = server.url.rsplit(":", 1)[1]
        url = f"http://me:pw@127.0.0.1:{port}/?token=abc&tenant=acme"
        cmd = [sys.executable, "-m", "levelfield", "eval", str(data), "--agent", url, "--out", str(out),
               "--concurrency", "1", "--quiet", "-m", "exact_match"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
        deadline = time.monotonic() + 60
        while not (out / "runs.jsonl").exists() or (out / "runs.jsonl").read_text(encoding="utf-8").count('"run"') < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    command = stderr.strip().splitlines()[-1]
    assert f"http://me:***@127.0.0.1:{port}/?token=***&tenant=acme" in command and command.endswith("--resume")
    assert "pw@" not in stderr and "token=abc" not in stderr and "URL credentials" in stderr


def test_an_unreachable_agent_with_url_credentials_is_named_by_the_bare_url():
    agent = A2AAgent("http://bob:hunter22@127.0.0.1:1/?api_key=k3y-value")
    assert agent.name == "http://127.0.0.1:1"


# -- names ------------------------------------------------------------------------------------------


def test_the_agent_is_named_after_its_card(raw_server):
    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task()))

    server = raw_server(ok, streaming=False)
    assert A2AAgent(server.url).name == "raw-agent"
    assert server.requests == []  # reading the card sends no message


def test_an_explicit_name_wins_over_the_card():
    assert A2AAgent("http://127.0.0.1:1", name="mine").name == "mine"


def test_the_name_stays_the_same_for_every_run_of_an_evaluation(raw_server):
    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task()))

    server = raw_server(ok, streaming=False)
    dataset = lf.load_dataset([{"case_id": f"c{i}", "prompt": f"第{i}个问题"} for i in range(4)])
    result = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], **FAST)
    assert {r.agent_name for r in result.runs} == {"raw-agent"}


# -- the case's session state ----------------------------------------------------------------------


def test_case_state_goes_as_message_metadata(raw_server):
    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task()))

    server = raw_server(ok, streaming=False)
    request = AgentRequest(prompt="Wie warm ist es?", case_id="c1", state={"user": "jürgen", "unit": "C"})
    asyncio.run(A2AAgent(server.url).arun(request))
    metadata = server.requests[0].json["params"]["message"]["metadata"]["levelfield"]
    assert metadata["state"] == {"user": "jürgen", "unit": "C"}


def test_empty_state_is_not_sent(raw_server):
    async def ok(request: Request, writer: asyncio.StreamWriter) -> None:
        await send_json(writer, rpc(request, completed_task()))

    server = raw_server(ok, streaming=False)
    asyncio.run(A2AAgent(server.url).arun(AgentRequest(prompt="hi", state={})))
    assert "state" not in server.requests[0].json["params"]["message"]["metadata"]["levelfield"]


def test_a_served_agent_receives_the_case_state():
    seen: list[dict[str, Any]] = []

    class Stateful:
        name = "stateful"

        async def arun(self, request: AgentRequest) -> AgentOutput:
            seen.append(dict(request.state))
            return AgentOutput(response="ok")

    with start_server(Stateful()) as server:
        request = AgentRequest(prompt="hi", case_id="c1", state={"user": "jürgen", "visits": 3})
        asyncio.run(A2AAgent(server.url).arun(request))
    assert seen == [{"user": "jürgen", "visits": 3}]


def test_a_state_column_reaches_the_served_agent_on_every_turn():
    seen: list[tuple[int, dict[str, Any]]] = []

    class Stateful:
        name = "stateful"

        async def arun(self, request: AgentRequest) -> AgentOutput:
            seen.append((request.turn, dict(request.state)))
            return AgentOutput(response="ok")

    row = {"case_id": "s", "turns": [{"prompt": "Olá"}, {"prompt": "E agora?"}], "state": {"cliente": "João", "nível": 2}}
    with start_server(Stateful()) as server:
        run = lf.evaluate(lf.load_dataset([row]), A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert seen == [(0, {"cliente": "João", "nível": 2}), (1, {"cliente": "João", "nível": 2})]
