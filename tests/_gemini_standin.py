"""A local stand-in of the Gemini API's ``generateContent`` on 127.0.0.1, for ADK's real ``Gemini`` class.

    with GeminiStandIn({"gemini-test": [[("get_weather", {"city": "Oslo"})], "Sunny in Oslo."]}) as server:
        model = server.model("gemini-test")   # google.adk.models.Gemini pointed at the stand-in

Each model plays a script: answer i of a turn is step i after the user's last message (a string is
a text answer, a list of ``(name, args)`` is one answer of function calls). Every answer reports
``usageMetadata`` (prompt tokens = the request's content count, 4 candidate tokens) and
``modelVersion``. ``server.requests`` keeps every request body received.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["GeminiStandIn"]


class GeminiStandIn:
    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                standin.requests.append(body)
                # /v1beta/models/<model>:generateContent
                model = self.path.split("/models/")[-1].split(":")[0]
                reply = standin.answer(model, body)
                data = json.dumps(reply).encode()
                self.send_response(200 if "error" not in reply else reply["error"]["code"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        steps = self.scripts.get(model)
        if steps is None:
            return {"error": {"code": 404, "message": f"model {model} not found", "status": "NOT_FOUND"}}
        contents = body.get("contents") or []
        start = max(
            (i for i, c in enumerate(contents)
             if c.get("role") == "user" and any(p.get("text") and not p["text"].startswith("For context:") for p in c.get("parts") or [])),
            default=-1,
        )
        step = steps[min(sum(1 for c in contents[start + 1:] if c.get("role") == "model"), len(steps) - 1)]
        parts = [{"text": step}] if isinstance(step, str) else [{"functionCall": {"name": n, "args": a}} for n, a in step]
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": len(contents), "candidatesTokenCount": 4, "totalTokenCount": len(contents) + 4},
            "modelVersion": f"{model}-001",
        }

    def model(self, name: str) -> Any:
        """ADK's ``Gemini`` for ``name``, sending its requests here (an API key that the stand-in ignores)."""
        from google.adk.models import Gemini

        return Gemini(model=name, base_url=self.url, client_kwargs={"api_key": "local-test-key", "vertexai": False})

    def __enter__(self) -> GeminiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
