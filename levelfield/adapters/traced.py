"""Any OpenTelemetry-instrumented agent, evaluated from the spans it emits while it runs.

``TracedAgent(fn)`` calls ``fn(prompt)`` (sync or async, like ``FunctionAgent``) inside a root
span of its own, collects in memory every span that ends in that span's trace, and reads the
trajectory, retrieved context and usage from them with the GenAI / OpenInference conventions
(:mod:`levelfield.formats.otel`). Frameworks levelfield has no adapter for (pydantic-ai, the
OpenAI Agents SDK, CrewAI, LlamaIndex...) are thereby evaluated with full trajectories.

Each run has its own trace id and spans are routed by it, so concurrent runs never mix spans.
Spans reach the collector through the global ``TracerProvider`` (one is installed when none is
set) or the ``tracer_provider`` given; hand ``agent.tracer_provider`` to instrumentors that take
one (``LangChainInstrumentor().instrument(tracer_provider=...)``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from .._core.data.protocol import AgentRequest
from .._core.data.types import AgentOutput, Usage
from .._core.errors import AgentOutputError, ConfigError, MissingExtraError
from .function import FunctionAgent, output_from_value

__all__ = ["TracedAgent", "SpanRouter"]


def _otel() -> Any:
    try:
        from opentelemetry import trace
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:
        raise MissingExtraError("traces", "opentelemetry-sdk", "lf.adapters.TracedAgent") from None
    return trace, sdk_trace


class SpanRouter:
    """A span processor that keeps, in memory, the finished spans of the traces being watched.

    Spans of traces nobody watches are dropped at once, so an application's other traffic costs
    nothing and memory holds only the runs in flight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._traces: dict[int, list[Any]] = {}

    def watch(self, trace_id: int) -> None:
        with self._lock:
            self._traces[trace_id] = []

    def take(self, trace_id: int) -> list[Any]:
        """The spans collected for ``trace_id``, which is no longer watched."""
        with self._lock:
            return self._traces.pop(trace_id, [])

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        with self._lock:
            bucket = self._traces.get(span.context.trace_id)
            if bucket is not None:
                bucket.append(span)

    def _on_ending(self, span: Any) -> None:  # SDK >= 1.3x calls it when present
        pass

    def shutdown(self) -> None:
        with self._lock:
            self._traces.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_routers: weakref.WeakKeyDictionary[Any, SpanRouter] = weakref.WeakKeyDictionary()
_routers_lock = threading.Lock()


def _router_for(provider: Any) -> SpanRouter:
    """The router attached to ``provider`` (attached on first use, once per provider)."""
    with _routers_lock:
        router = _routers.get(provider)
        if router is None:
            router = SpanRouter()
            provider.add_span_processor(router)
            _routers[provider] = router
        return router


def _global_provider() -> Any:
    trace, sdk_trace = _otel()
    provider = trace.get_tracer_provider()
    if not hasattr(provider, "add_span_processor"):
        # No SDK provider yet (the API's proxy): install one so instrumented frameworks emit spans.
        trace.set_tracer_provider(sdk_trace.TracerProvider())
        provider = trace.get_tracer_provider()
    if not hasattr(provider, "add_span_processor"):
        # Not a missing package: another library installed a provider of its own, which OpenTelemetry
        # does not let us replace. A configuration the caller fixes by naming the provider.
        raise ConfigError(
            f"the global TracerProvider ({type(provider).__name__}) cannot take a span processor; "
            "pass tracer_provider=opentelemetry.sdk.trace.TracerProvider() to TracedAgent"
        )
    return provider


class TracedAgent:
    """Runs ``fn(prompt)`` under an in-memory span collector; the trajectory comes from its spans.

    ``fn`` may return a str, a dict with ``response``, an ``AgentOutput``, or anything else (a
    framework's result object): then the response is read from the spans too (the agent span's
    output, else the last model reply). Calls found in the spans are the trajectory unless ``fn``
    returned one itself.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, tracer_provider: Any = None) -> None:
        self._call = FunctionAgent(fn, name=name)
        self.name = self._call.name
        self._provider = tracer_provider

    @property
    def tracer_provider(self) -> Any:
        """The OpenTelemetry ``TracerProvider`` whose spans this agent reads."""
        if self._provider is None:
            self._provider = _global_provider()
        return self._provider

    async def arun(self, request: AgentRequest) -> AgentOutput:
        from ..formats.otel import span_from_sdk
        from ..formats.spans import row_from_spans

        provider = self.tracer_provider
        router = _router_for(provider)
        tracer = provider.get_tracer("levelfield")
        with tracer.start_as_current_span(
            "levelfield.run", attributes={"levelfield.case_id": request.case_id, "levelfield.agent": self.name}
        ) as root:
            ctx = root.get_span_context()
            router.watch(ctx.trace_id)
            try:
                value = await self._invoke(request)
            except BaseException:
                router.take(ctx.trace_id)
                raise
        spans = router.take(ctx.trace_id)
        ids = {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
        mine = [span_from_sdk(s) for s in spans if s.context.span_id != ctx.span_id]
        if not mine:
            row: dict[str, Any] = {"predicted_trajectory": [], "response": None, "retrieved_context": None}
        else:
            row = row_from_spans(ids["trace_id"], mine, check=False)
        given = self._given(value)
        usage = row.get("usage")
        response = given.response if given is not None else row.get("response")
        if response is None:
            raise AgentOutputError(
                f"agent {self.name!r} returned {type(value).__name__} and its spans hold no final answer; "
                "return the answer text from fn, or instrument the framework so its agent span records the output"
            )
        return AgentOutput(
            response=response,
            trajectory=(given.trajectory if given is not None and given.trajectory else row["predicted_trajectory"]),
            retrieved_context=row.get("retrieved_context"),
            usage=(given.usage if given is not None and given.usage else Usage(**usage) if usage else None),
            raw={**ids, "value": value, "span_count": len(mine)},
        )

    async def _invoke(self, request: AgentRequest) -> Any:
        # FunctionAgent knows the calling conventions (sync in a worker thread with this context,
        # async natively, history/session_id keywords); only its reading of the value is skipped.
        import inspect

        from .._core.run.threads import run_sync

        call = self._call
        kwargs = call._kwargs(request)
        if call._is_async:
            return await call.fn(request.prompt, **kwargs)
        value = await run_sync(call.fn, request.prompt, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value

    def _given(self, value: Any) -> AgentOutput | None:
        """What ``fn`` returned, when it is one of FunctionAgent's shapes; None for a framework's own result."""
        if isinstance(value, (str, AgentOutput)) or (isinstance(value, dict) and "response" in value):
            return output_from_value(value, self.name)
        return None

    def __repr__(self) -> str:
        return f"TracedAgent({self.name!r})"
