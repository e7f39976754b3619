"""Local stand-ins for three model providers' HTTP APIs, speaking each one's documented wire format.

Each is a small ``http.server`` on 127.0.0.1 (port 0, in a thread) that the real client library is
pointed at (``base_url``): OpenAI chat completions (``/v1/chat/completions``), Anthropic messages
(``/v1/messages``) and Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``, each
non-streamed and streamed (SSE). A stand-in answers from a script: step ``k`` of the script answers
the request that carries ``k`` tool results (so a conversation's place is read from the request,
never from server state). Every answer's usage is written in the provider's own terms, from a
:class:`Bill` in plain terms, and each answer is kept (as the non-streamed body it is, or the one
its stream adds up to) so a test can price exactly what the provider reported.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Bill", "Step", "OpenAIStandIn", "AnthropicStandIn", "GeminiStandIn"]


@dataclass(frozen=True)
class Bill:
    """What one model call spent: every prompt token (cached ones included), the parts read from and
    written to the prompt cache, every generated token (reasoning included) and the reasoning part."""

    prompt: int
    completion: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class Step:
    """One answer: tool calls ``[(name, args), ...]`` or a final text, and what it cost."""

    bill: Bill
    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    tokens: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] = ()
    """The text as generated tokens: (token, logprob, ((alternative, logprob), ...)); their joined
    tokens must be ``text``. Sent (non-streamed) only when the request asks for log-probabilities."""


@dataclass
class _StandIn:
    model: str
    script: list[Step]
    answers: list[dict[str, Any]] = field(default_factory=list)
    """Every answer given, as the provider's non-streamed response body."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    streamed: list[bool] = field(default_factory=list)
    """Whether each answer went out as a stream of server-sent events."""
    unknown_paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> _StandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stand_in._serve(self, self.path, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- serving --------------------------------------------------------------------------------
    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def _step(self, tool_results: int) -> Step:
        return self.script[min(tool_results, len(self.script) - 1)]

    def _keep(self, request: dict[str, Any], answer: dict[str, Any], streamed: bool) -> None:
        with self._lock:
            self.requests.append(request)
            self.answers.append(answer)
            self.streamed.append(streamed)

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, payload: dict[str, Any], status: int = 200) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]]) -> None:
        """Server-sent events (``event:`` lines where the provider names them), then the connection closes."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            chunk = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            handler.wfile.write(chunk.encode("utf-8"))
            handler.wfile.flush()
        handler.close_connection = True

    def _not_found(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        self.unknown_paths.append(path)
        self._json(handler, {"error": {"message": f"no route {path}"}}, status=404)


class OpenAIStandIn(_StandIn):
    """``POST /v1/chat/completions``: ``tool_calls``, ``usage.prompt_tokens_details.cached_tokens`` and
    ``completion_tokens_details.reasoning_tokens``; streamed as ``chat.completion.chunk`` events, the
    usage in a last chunk with no choices when ``stream_options.include_usage`` asks for it."""

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/chat/completions"):
            return self._not_found(handler, path)
        step = self._step(sum(1 for m in body.get("messages", []) if m.get("role") == "tool"))
        calls = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
                 for name, args in step.calls]
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else step.text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        b = step.bill
        usage = {
            "prompt_tokens": b.prompt, "completion_tokens": b.completion, "total_tokens": b.prompt + b.completion,
            "prompt_tokens_details": {"cached_tokens": b.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": b.reasoning, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        }
        completion_id, created = f"chatcmpl-{uuid.uuid4().hex[:16]}", 1_760_000_000
        logprobs = None
        if body.get("logprobs") and step.tokens:
            assert "".join(t for t, _, _ in step.tokens) == step.text, "the tokens must spell the text"
            top = int(body.get("top_logprobs") or 0)
            logprobs = {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8")),
                                     "top_logprobs": [{"token": a, "logprob": alp, "bytes": list(a.encode("utf-8"))}
                                                      for a, alp in alts[:top]]}
                                    for t, lp, alts in step.tokens], "refusal": None}
        answer = {"id": completion_id, "object": "chat.completion", "created": created, "model": self.model,
                  "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                               "finish_reason": "tool_calls" if calls else "stop"}],
                  "usage": usage, "service_tier": "default", "system_fingerprint": "fp_standin"}
        self._keep(body, answer, bool(body.get("stream")))
        if not body.get("stream"):
            return self._json(handler, answer)

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": self.model,
                    "system_fingerprint": "fp_standin", "choices": choices, **extra}

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": "" if not calls else None}))]
        for i, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            events.append((None, chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                        "function": {"name": call["function"]["name"], "arguments": ""}}]})))
            half = len(arguments) // 2  # the arguments arrive in pieces
            for piece in (arguments[:half], arguments[half:]):
                events.append((None, chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})))
        if not calls:
            for word in _pieces(step.text):
                events.append((None, chunk({"content": word})))
        events.append((None, chunk({}, "tool_calls" if calls else "stop", **({"usage": None} if include_usage else {}))))
        if include_usage:
            events.append((None, chunk(None, usage=usage)))
        events.append((None, "[DONE]"))
        self._sse(handler, events)


class AnthropicStandIn(_StandIn):
    """``POST /v1/messages``: ``tool_use`` content blocks; ``usage.input_tokens`` leaves out
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` (as Anthropic bills them), and
    ``output_tokens_details.thinking_tokens`` is part of ``output_tokens``; streamed as ``message_start``,
    ``content_block_*`` and a ``message_delta`` with the cumulative usage."""

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/v1/messages"):
            return self._not_found(handler, path)
        results = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                      for block in m["content"] if block.get("type") == "tool_result")
        step = self._step(results)
        b = step.bill
        usage: dict[str, Any] = {
            "input_tokens": b.prompt - b.cache_read - b.cache_write,
            "cache_creation_input_tokens": b.cache_write,
            "cache_read_input_tokens": b.cache_read,
            "output_tokens": b.completion,
            "service_tier": "standard",
        }
        if b.reasoning:
            usage["output_tokens_details"] = {"thinking_tokens": b.reasoning}
        blocks: list[dict[str, Any]] = []
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        for name, args in step.calls:
            blocks.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": args})
        answer = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant", "model": self.model,
                  "content": blocks, "stop_reason": "tool_use" if step.calls else "end_turn", "stop_sequence": None,
                  "usage": usage}
        self._keep(body, answer, bool(body.get("stream")))
        if not body.get("stream"):
            return self._json(handler, answer)
        start_usage = {**usage, "output_tokens": 1}
        start_usage.pop("output_tokens_details", None)
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": {**answer, "content": [], "stop_reason": None,
                                                                    "usage": start_usage}}),
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                       "content_block": {"type": "text", "text": ""}}))
                for word in _pieces(block["text"]):
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                           "delta": {"type": "text_delta", "text": word}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                       "content_block": {**block, "input": {}}}))
                arguments = json.dumps(block["input"], ensure_ascii=False)
                half = len(arguments) // 2
                for piece in (arguments[:half], arguments[half:]):
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                           "delta": {"type": "input_json_delta", "partial_json": piece}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": None},
                                         "usage": {k: v for k, v in usage.items() if k != "service_tier"}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self._sse(handler, events)


class GeminiStandIn(_StandIn):
    """``POST /v1beta/models/{model}:generateContent`` (and ``:streamGenerateContent?alt=sse``):
    ``functionCall`` parts; ``usageMetadata.promptTokenCount`` includes ``cachedContentTokenCount``,
    ``candidatesTokenCount`` leaves out ``thoughtsTokenCount`` (as Gemini counts them)."""

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if ":generateContent" not in path and ":streamGenerateContent" not in path:
            return self._not_found(handler, path)
        results = sum(1 for c in body.get("contents", []) for part in c.get("parts") or []
                      if "functionResponse" in part or "function_response" in part)
        step = self._step(results)
        b = step.bill
        usage: dict[str, Any] = {
            "promptTokenCount": b.prompt,
            "candidatesTokenCount": b.completion - b.reasoning,
            "totalTokenCount": b.prompt + b.completion,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": b.prompt}],
        }
        if b.cache_read:
            usage["cachedContentTokenCount"] = b.cache_read
            usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": b.cache_read}]
        if b.reasoning:
            usage["thoughtsTokenCount"] = b.reasoning
        parts: list[dict[str, Any]] = [{"functionCall": {"name": name, "args": args}} for name, args in step.calls]
        if step.text:
            parts.append({"text": step.text})
        answered: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        config = body.get("generationConfig") or {}
        if config.get("responseLogprobs") and step.tokens:
            assert "".join(t for t, _, _ in step.tokens) == step.text, "the tokens must spell the text"
            top = int(config.get("logprobs") or 0)
            answered["logprobsResult"] = {
                "topCandidates": [{"candidates": [{"token": a, "logProbability": alp} for a, alp in alts[:top]]}
                                  for _, _, alts in step.tokens],
                "chosenCandidates": [{"token": t, "logProbability": lp} for t, lp, _ in step.tokens],
            }
            answered["avgLogprobs"] = sum(lp for _, lp, _ in step.tokens) / len(step.tokens)
        answer = {"candidates": [answered],
                  "usageMetadata": usage, "modelVersion": self.model, "responseId": uuid.uuid4().hex[:22]}
        self._keep(body, answer, ":streamGenerateContent" in path)
        if ":streamGenerateContent" not in path:
            return self._json(handler, answer)
        # Streamed: the text in pieces; the usage (cumulative) and the finish reason on the last chunk.
        calls = [{"functionCall": {"name": n, "args": a}} for n, a in step.calls]
        chunks = [[*calls, {"text": piece}] if i == 0 else [{"text": piece}]
                  for i, piece in enumerate(_pieces(step.text))] if step.text else [calls]
        events: list[tuple[str | None, Any]] = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": chunk}, "index": 0}
            if last:
                candidate["finishReason"] = "STOP"
            events.append((None, {"candidates": [candidate],
                                  "usageMetadata": usage if last else {"promptTokenCount": b.prompt,
                                                                       "totalTokenCount": b.prompt},
                                  "modelVersion": self.model, "responseId": answer["responseId"]}))
        self._sse(handler, events)


def _pieces(text: str) -> list[str]:
    """A text in a few pieces, as a stream delivers it (at least one)."""
    size = max(1, len(text) // 3)
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
