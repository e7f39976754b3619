"""Stand-ins for the one thing that cannot run offline: Vertex AI's Agent Engine service.

``deployed(template)`` returns a real ``vertexai.agent_engines.AgentEngine`` (the class
``agent_engines.get`` returns), with its operations registered by the SDK's own code from the
template's operation schemas. Only its execution clients are replaced: they serve each request
from the local template in process, and send answers back as the service does (a ``query``
output in a protobuf ``Value``, so every number arrives as a float; a stream as JSON lines in
``HttpBody`` chunks), so the deployed agent's methods return the exact shapes a real one does.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from google.api import httpbody_pb2
from google.cloud.aiplatform_v1 import types as aip_types
from google.protobuf import json_format
from vertexai.agent_engines import _agent_engines

__all__ = ["deployed", "ExecutionService"]

RESOURCE = "projects/levelfield-samples/locations/us-central1/reasoningEngines/123"


def _input(request: Any) -> dict[str, Any]:
    return json_format.MessageToDict(request._pb.input)


def _body(item: Any) -> httpbody_pb2.HttpBody:
    return httpbody_pb2.HttpBody(content_type="application/json", data=json.dumps(item).encode())


class ExecutionService:
    """What the Agent Engine service does with a request: run the template's method, serialize."""

    def __init__(self, template: Any, *, fail_with: list[BaseException] | None = None) -> None:
        self.template = template
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_with = list(fail_with or [])
        """Errors raised by the next calls, one per call (e.g. a 503), before serving normally."""

    def _start(self, request: Any) -> tuple[Any, dict[str, Any]]:
        kwargs = _input(request)
        self.requests.append((request.class_method, kwargs))
        if self.fail_with:
            raise self.fail_with.pop(0)
        return getattr(self.template, request.class_method), kwargs

    # sync client
    def query_reasoning_engine(self, request: Any) -> Any:
        method, kwargs = self._start(request)
        output = method(**kwargs)
        if inspect.isawaitable(output):
            output = asyncio.run(output)
        return aip_types.QueryReasoningEngineResponse(output=json.loads(json.dumps(output)))

    def stream_query_reasoning_engine(self, request: Any) -> Any:
        method, kwargs = self._start(request)
        stream = method(**kwargs)
        if hasattr(stream, "__aiter__"):
            async def drain() -> list[Any]:
                return [item async for item in stream]

            stream = asyncio.run(drain())
        for item in stream:
            yield _body(item)


class AsyncExecutionService:
    """The async execution client: the same service, awaited."""

    def __init__(self, service: ExecutionService) -> None:
        self.service = service

    async def query_reasoning_engine(self, request: Any) -> Any:
        method, kwargs = self.service._start(request)
        output = method(**kwargs)
        if inspect.isawaitable(output):
            output = await output
        return aip_types.QueryReasoningEngineResponse(output=json.loads(json.dumps(output)))

    async def stream_query_reasoning_engine(self, request: Any) -> Any:
        method, kwargs = self.service._start(request)
        stream = method(**kwargs)

        async def chunks() -> Any:
            if hasattr(stream, "__aiter__"):
                async for item in stream:
                    yield _body(item)
            else:
                for item in stream:
                    yield _body(item)

        return chunks()


def deployed(template: Any, *, resource_name: str = RESOURCE, display_name: str = "home-automation", **service_kwargs: Any):
    """A real ``AgentEngine`` for ``template`` as if deployed, and the service answering it."""
    operations = _agent_engines._get_registered_operations(template)
    class_methods = _agent_engines._generate_class_methods_spec_or_raise(agent_engine=template, operations=operations)
    engine = _agent_engines.AgentEngine.__new__(_agent_engines.AgentEngine)
    spec = aip_types.ReasoningEngineSpec()
    spec.class_methods.extend(class_methods)  # as agent_engines.create() builds it
    engine._gca_resource = aip_types.ReasoningEngine(name=resource_name, display_name=display_name, spec=spec)
    engine._operation_schemas = None
    service = ExecutionService(template, **service_kwargs)
    engine.execution_api_client = service
    engine.execution_async_client = AsyncExecutionService(service)
    _agent_engines._register_api_methods_or_raise(engine)
    return engine, service
