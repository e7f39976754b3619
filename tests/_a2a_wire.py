"""A hand-written A2A 1.0 JSON-RPC server (Starlette on 127.0.0.1), conformant or broken in one named way.

A real a2a-sdk server cannot be made to break the protocol, so the broken servers are written on
the wire: the conformant one (``defect=None``) speaks the exact shapes a2a-sdk 1.x sends (checked
by the preflight and by ``A2AAgent`` in the tests), and each defect changes one thing. Its agent
looks the prompt up with one tool call (marked the ADK way) and answers ``answer: <prompt>``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from levelfield.adapters.a2a.server import start_asgi

DEFECTS = {
    "bad_card": "card.required_fields",
    "no_final_state": "send.final_state",
    "wrong_part_kind": "send",
    "stream_not_served": "stream",
    "no_retry_after": "retry_after",
    "error_as_completed": "errors",
    "status_without_state": "stream.status",
    "no_jsonrpc_envelope": "send",
    "invalid_state": "send",
    "state_after_final": "stream.final_state",
    "get_task_lost": "get_task",
}
"""Each defect and the preflight check that must name it (fail)."""

PLAIN_TOOL_CALLS = "plain_tool_calls"
"""Not a spec defect: tool calls in data parts without the ADK mark (the preflight warns)."""


def _answer(prompt: str) -> str:
    return f"answer: {prompt}"


class WireAgent:
    def __init__(self, url: str, defect: str | None) -> None:
        self.url = url
        self.defect = defect
        self.tasks: dict[str, dict[str, Any]] = {}

    # -- shapes -----------------------------------------------------------------------------------
    def card(self) -> dict[str, Any]:
        card: dict[str, Any] = {
            "name": "wire-agent",
            "description": "A hand-written A2A 1.0 agent",
            "version": "1.0.0",
            "supportedInterfaces": [{"url": self.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "lookup", "name": "lookup", "description": "Looks things up", "tags": ["demo"]}],
        }
        if self.defect == "bad_card":
            del card["supportedInterfaces"]
        return card

    def state(self, name: str) -> str:
        if self.defect == "invalid_state" and name == "completed":
            return "TASK_STATE_DONE"
        if self.defect == "no_final_state" and name == "completed":
            name = "working"
        return "TASK_STATE_" + name.upper().replace("-", "_")

    def text_part(self, text: str) -> dict[str, Any]:
        return {"kind": "text", "text": text} if self.defect == "wrong_part_kind" else {"text": text}

    def call_parts(self, prompt: str) -> list[dict[str, Any]]:
        call = {"data": {"name": "lookup", "args": {"query": prompt}, "id": "call-1"}}
        result = {"data": {"name": "lookup", "response": {"found": prompt}, "id": "call-1"}}
        if self.defect != PLAIN_TOOL_CALLS:
            call["metadata"] = {"adk_type": "function_call"}
            result["metadata"] = {"adk_type": "function_response"}
        return [call, result]

    def message(self, task_id: str, context_id: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"messageId": uuid.uuid4().hex, "contextId": context_id, "taskId": task_id, "role": "ROLE_AGENT",
                "parts": parts}

    def task(self, task_id: str) -> dict[str, Any]:
        t = self.tasks[task_id]
        return {
            "id": task_id, "contextId": t["context"], "status": {"state": self.state(t["state"])},
            "artifacts": [{"artifactId": "a-" + task_id, "name": "response", "parts": [self.text_part(_answer(t["prompt"]))]}],
            "history": [t["user"], self.message(task_id, t["context"], self.call_parts(t["prompt"]))],
        }

    def new_task(self, message: dict[str, Any]) -> str:
        task_id = uuid.uuid4().hex
        prompt = "".join(p.get("text", "") for p in message.get("parts") or [] if isinstance(p, dict))
        self.tasks[task_id] = {"context": message.get("contextId") or uuid.uuid4().hex, "state": "completed",
                               "prompt": prompt, "user": message}
        if self.defect == "state_after_final":
            self.tasks[task_id]["state"] = "working"  # where the stream left it
        return task_id

    # -- the endpoint -----------------------------------------------------------------------------
    async def card_route(self, request: Request) -> Response:
        return JSONResponse(self.card())

    async def rpc(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return self.error(None, -32700, "Parse error", bad=True)
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
            return self.error(None, -32600, "Invalid Request", bad=True)
        rid, method, params = body.get("id"), body["method"], body.get("params") or {}
        if method in ("SendMessage", "SendStreamingMessage"):
            message = params.get("message") if isinstance(params, dict) else None
            if not isinstance(message, dict) or not message.get("messageId") or not isinstance(message.get("parts"), list):
                return self.error(rid, -32602, "Invalid params: message", bad=True)
            if self.defect == "no_retry_after":
                return PlainTextResponse("slow down", status_code=429)
            task_id = self.new_task(message)
            if method == "SendMessage":
                if self.defect == "state_after_final":
                    self.tasks[task_id]["state"] = "completed"
                return self.result(rid, {"task": self.task(task_id)})
            if self.defect == "stream_not_served":
                return self.error(rid, -32601, "Method not found")
            return StreamingResponse(self.stream(rid, task_id), media_type="text/event-stream")
        if method in ("GetTask", "CancelTask"):
            task_id = params.get("id") if isinstance(params, dict) else None
            if task_id not in self.tasks or (method == "GetTask" and self.defect == "get_task_lost"):
                return self.error(rid, -32001, "Task not found")
            if method == "CancelTask":
                return self.error(rid, -32002, "Task cannot be canceled")
            return self.result(rid, self.task(task_id))
        return self.error(rid, -32601, "Method not found", bad=True)

    def result(self, rid: Any, result: Any) -> Response:
        if self.defect == "no_jsonrpc_envelope":
            return JSONResponse(result)
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str, *, bad: bool = False) -> Response:
        if bad and self.defect == "error_as_completed":
            # The defect: a bad request answered as a finished task whose text is the error.
            task = {"id": uuid.uuid4().hex, "contextId": uuid.uuid4().hex, "status": {"state": "TASK_STATE_COMPLETED"},
                    "artifacts": [{"artifactId": "err", "parts": [{"text": f"error: {message}"}]}]}
            return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": {"task": task}})
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    async def stream(self, rid: Any, task_id: str):
        t = self.tasks[task_id]

        def event(result: dict[str, Any]) -> str:
            body = result if self.defect == "no_jsonrpc_envelope" else {"jsonrpc": "2.0", "id": rid, "result": result}
            return f"data: {json.dumps(body)}\n\n"

        def status(state: str, parts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
            update: dict[str, Any] = {"taskId": task_id, "contextId": t["context"]}
            if self.defect != "status_without_state":
                update["status"] = {"state": self.state(state)}
                if parts:
                    update["status"]["message"] = self.message(task_id, t["context"], parts)
            return {"statusUpdate": update}

        yield event({"task": {"id": task_id, "contextId": t["context"], "status": {"state": self.state("submitted")},
                              "history": [t["user"]]}})
        yield event(status("working", self.call_parts(t["prompt"])))
        yield event({"artifactUpdate": {"taskId": task_id, "contextId": t["context"], "artifact": {
            "artifactId": "a-" + task_id, "name": "response", "parts": [self.text_part(_answer(t["prompt"]))]}}})
        yield event(status("completed"))
        if self.defect == "state_after_final":
            yield event(status("working"))


def build(url: str, defect: str | None = None) -> Starlette:
    agent = WireAgent(url, defect)
    return Starlette(routes=[
        Route("/.well-known/agent-card.json", agent.card_route),
        Route("/", agent.rpc, methods=["POST"]),
    ])


def start(defect: str | None = None):
    """The server, started on 127.0.0.1 (port 0); use as a context manager."""
    return start_asgi(lambda url: build(url, defect))


@contextlib.contextmanager
def nobody_listening() -> Iterator[str]:
    """The URL of a port on 127.0.0.1 that is bound but not listening: a connection to it is refused, and no
    other process can take the port meanwhile (a server's port closed again can be taken by another test's
    server, which would then answer)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"
