"""The served agent's side of a2a-sdk: each A2A message run as a levelfield agent turn, and the tasks kept.

The executor answers a message as the evaluation runner runs an agent: anything it raises,
``SystemExit`` included, is a failed task. Each tool call and tool response of the trajectory goes
out as a data part marked the way ADK marks them (``metadata["adk_type"]`` = ``function_call`` /
``function_response``), and the final response as one complete artifact (``lastChunk``). The task
store keeps finished tasks up to a bound (oldest evicted first). ``levelfield.adapters.a2a.server``
builds the app around them.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import sys
from typing import TYPE_CHECKING, Any

from ..._core.run.failures import cancelled_from_outside as _cancelled_from_outside
from ..._core.run.failures import describe_error

if TYPE_CHECKING:
    from ..._core.data.protocol import AgentRunnable
    from ..._core.data.types import ToolCall

__all__: list[str] = []  # private to the server: _executor_class, _task_store_class (and _data_part for tests)

MAX_CONTEXTS = 10_000
"""Conversations (context ids) whose history the server keeps, most recent first."""


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def _data_part(data: dict[str, Any], metadata: dict[str, Any]) -> Any:
    from a2a.helpers import new_data_part

    part = new_data_part(_jsonable(data))
    part.metadata.update(_jsonable(metadata))
    return part


def _structured(value: Any) -> Any:
    """``value``, or what it encodes when it is the JSON text of an object or an array."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool_call_parts(call: ToolCall) -> tuple[Any, Any]:
    """The ADK-convention ``function_call`` and ``function_response`` parts of one tool call.

    A call without an id is sent without one (the client pairs it with its response by order),
    so the trajectory comes back exactly as the agent reported it.
    """
    from .events import ADK_TYPE_KEY, FUNCTION_CALL, FUNCTION_RESPONSE, TOOL_ERROR_KEY

    meta: dict[str, Any] = {}
    if call.agent:
        meta["levelfield_agent"] = call.agent
    ident = {"id": call.id} if call.id else {}
    request = _data_part({"name": call.tool_name, "args": call.tool_input, **ident}, {ADK_TYPE_KEY: FUNCTION_CALL, **meta})
    # Send the structured value: a tool output that is JSON text (LangChain tools return text)
    # goes out parsed. ADK wraps a non-dict result as {"result": value}; do the same so ADK
    # clients read it.
    value = _structured(call.tool_output)
    output = value if isinstance(value, dict) else {"result": value}
    response_meta = {ADK_TYPE_KEY: FUNCTION_RESPONSE, **meta}
    if call.error:
        response_meta[TOOL_ERROR_KEY] = call.error
    response = _data_part({"name": call.tool_name, "response": output, **ident}, response_meta)
    return request, response


@functools.cache
def _executor_class() -> type:
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from a2a.types.a2a_pb2 import TaskState
    from google.protobuf.json_format import MessageToDict

    from ..._core.data.protocol import AgentRequest
    from ..._core.data.types import AgentOutput, Message
    from .events import ERROR_TYPE_KEY, LEVELFIELD_KEY, USAGE_KEY, restore_ints

    class LevelfieldExecutor(AgentExecutor):
        """Runs a levelfield ``AgentRunnable`` for each A2A message; history kept per context id."""

        def __init__(self, agent: AgentRunnable) -> None:
            self.agent = agent
            self.histories: collections.OrderedDict[str, list[Message]] = collections.OrderedDict()

        def _request(self, context: Any) -> AgentRequest:
            extra: dict[str, Any] = {}
            if context.message is not None and context.message.HasField("metadata"):
                extra = MessageToDict(context.message.metadata).get(LEVELFIELD_KEY) or {}
            context_id = context.context_id or ""
            history = self.histories.get(context_id)
            if history is None:
                history = [Message.model_validate(m) for m in extra.get("history") or []]
            turn = extra.get("turn")
            state = extra.get("state")  # the case's initial session state, from A2AAgent
            return AgentRequest(
                prompt=context.get_user_input(),
                history=list(history),
                case_id=str(extra.get("case_id") or ""),
                session_id=context_id or None,
                turn=int(turn) if isinstance(turn, (int, float)) else len(history) // 2,
                state=restore_ints(state) if isinstance(state, dict) else {},
            )

        def _remember(self, request: AgentRequest, response: str) -> None:
            key = request.session_id or ""
            self.histories[key] = [
                *request.history,
                Message(role="user", content=request.prompt),
                Message(role="assistant", content=response),
            ]
            self.histories.move_to_end(key)
            while len(self.histories) > MAX_CONTEXTS:
                self.histories.popitem(last=False)

        async def _emit_trajectory(self, updater: Any, output: AgentOutput | None) -> None:
            if output is None:
                return
            for call in output.trajectory:
                request_part, response_part = _tool_call_parts(call)
                for part in (request_part, response_part):
                    await updater.update_status(TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([part]))
            for text in output.intermediate_responses:
                message = updater.new_agent_message([new_text_part(text)])
                await updater.update_status(TaskState.TASK_STATE_WORKING, message=message)

        async def execute(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            request = self._request(context)
            try:
                output = await self.agent.arun(request)
            except asyncio.CancelledError:
                if _cancelled_from_outside():
                    raise  # the client cancelled the task, or the server is stopping
                output, error = None, sys.exc_info()[1]
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: the task fails, the server goes on
                output, error = None, exc
            else:
                error = None
            if error is not None:
                text, error_type = describe_error(error)
                partial = getattr(error, "partial", None)
                await self._emit_trajectory(updater, partial if isinstance(partial, AgentOutput) else None)
                message = updater.new_agent_message([new_text_part(text)], metadata={ERROR_TYPE_KEY: error_type})
                await updater.failed(message)
                return
            if not isinstance(output, AgentOutput):
                message = updater.new_agent_message(
                    [new_text_part(f"agent {self.agent.name!r} returned {type(output).__name__}, not AgentOutput")],
                    metadata={ERROR_TYPE_KEY: "bad_output"},
                )
                await updater.failed(message)
                return
            await self._emit_trajectory(updater, output)
            metadata = None
            if output.usage is not None:
                usage = output.usage
                # Gemini's names and meaning (what ADK's clients read): the prompt count includes
                # cache reads; the candidates count leaves thoughts out.
                counts: dict[str, Any] = {
                    "promptTokenCount": usage.input_tokens,
                    "candidatesTokenCount": usage.output_tokens - (usage.reasoning_tokens or 0),
                    "totalTokenCount": usage.total_tokens,
                }
                if usage.cache_read_tokens is not None:
                    counts["cachedContentTokenCount"] = usage.cache_read_tokens
                if usage.reasoning_tokens is not None:
                    counts["thoughtsTokenCount"] = usage.reasoning_tokens
                if usage.cache_write_tokens is not None:
                    counts["cache_write_tokens"] = usage.cache_write_tokens  # Gemini has no name for it
                # Which model spent them, so the client can price them (A2A has no field for it).
                if usage.model is not None:
                    counts["model"] = usage.model
                if usage.by_model is not None:
                    counts["by_model"] = {k: v.model_dump(exclude_none=True) for k, v in usage.by_model.items()}
                metadata = {USAGE_KEY: counts}
            # last_chunk: the answer is whole. ADK's RemoteA2aAgent treats an artifact without it
            # as a partial event and its session then has no final response.
            await updater.add_artifact(
                [new_text_part(output.response)], name="response", metadata=metadata, last_chunk=True
            )
            self._remember(request, output.response)
            await updater.complete()

        async def cancel(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is not None:
                await TaskUpdater(event_queue, task.id, task.context_id).cancel()

    return LevelfieldExecutor


@functools.cache
def _task_store_class() -> type:
    from a2a.server.tasks import InMemoryTaskStore, TaskStore
    from a2a.types.a2a_pb2 import TaskState

    finished_states = {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }

    class BoundedTaskStore(TaskStore):
        """a2a-sdk's in-memory task store keeping at most ``max_finished`` finished tasks (oldest
        evicted first); tasks still running are always kept."""

        def __init__(self, max_finished: int) -> None:
            self._tasks = InMemoryTaskStore()
            self._max_finished = max_finished
            self._finished: collections.OrderedDict[str, Any] = collections.OrderedDict()  # id -> its call context

        async def save(self, task: Any, context: Any) -> None:
            await self._tasks.save(task, context)
            if task.status.state in finished_states:
                self._finished[task.id] = context  # the context names the owner the store files it under
                self._finished.move_to_end(task.id)
                while len(self._finished) > self._max_finished:
                    old_id, old_context = self._finished.popitem(last=False)
                    await self._tasks.delete(old_id, old_context)

        async def get(self, task_id: str, context: Any) -> Any:
            return await self._tasks.get(task_id, context)

        async def list(self, params: Any, context: Any) -> Any:
            return await self._tasks.list(params, context)

        async def delete(self, task_id: str, context: Any) -> None:
            self._finished.pop(task_id, None)
            await self._tasks.delete(task_id, context)

    return BoundedTaskStore
