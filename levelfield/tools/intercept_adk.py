"""Levelled ADK tools, through a runner plugin's tool callbacks (google-adk 2.x ``BasePlugin``).

``before_tool_callback`` answers a call from the cassette or the shared record (ADK then skips the
tool), or lets it run; ``after_tool_callback`` records a live answer and applies the run's fault;
``on_tool_error_callback`` records a live error. The runners ADK makes for ``AgentTool``s inherit
the plugin, so their inner calls are levelled too, and an ``AgentTool`` is itself a tool. A fault
or replayed error that raises fails the run, as a tool that raises does under ADK (ADK reports it
as an error in the plugin). google.adk is imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .cassette import Entry
from .level import Call, begin

__all__ = ["level_adk", "PLUGIN_NAME"]

PLUGIN_NAME = "levelfield_tools"


def _as_response(output: Any) -> dict[str, Any]:
    # What ADK makes of a non-dict result; and None would read as "no answer" to ADK.
    return output if isinstance(output, dict) else {"result": output}


def _plugin() -> Any:
    import concurrent.futures

    from google.adk.plugins.base_plugin import BasePlugin

    class LevelledToolsPlugin(BasePlugin):
        def __init__(self) -> None:
            super().__init__(name=PLUGIN_NAME)
            self._live: dict[Any, Call] = {}

        @staticmethod
        def _key(tool_context: Any) -> Any:
            invocation = getattr(tool_context, "_invocation_context", None)
            return id(invocation), getattr(tool_context, "function_call_id", None)

        async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Any:
            call = begin(tool.name, dict(tool_args or {}))
            if call is None:
                return None
            import asyncio

            while True:
                got = call.resolve()
                if isinstance(got, concurrent.futures.Future):
                    try:
                        entry = await asyncio.wrap_future(got)
                    except Exception as exc:  # noqa: BLE001 - the recorder gave up: try again
                        if type(exc).__name__ == "_Abandoned":
                            continue
                        raise
                    return _as_response(await call.adeliver(entry))
                if isinstance(got, Entry):
                    return _as_response(await call.adeliver(got))
                self._live[self._key(tool_context)] = call
                return None

        async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any,
                                      result: Any) -> Any:
            call = self._live.pop(self._key(tool_context), None)
            if call is None:
                return None
            call.finish(output=result)
            answer = await call.adeliver(Entry(result), copied=False)
            return None if answer is result else _as_response(answer)

        async def on_tool_error_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any,
                                         error: Exception) -> Any:
            call = self._live.pop(self._key(tool_context), None)
            if call is None:
                return None
            call.finish(error=error)
            if call.fault in ("error", "timeout", "rate_limit"):
                await call.adeliver(Entry(), live_error=error)  # raises the fault
            return None  # ADK raises the tool's own error, as it does unlevelled

    return LevelledToolsPlugin()


def level_adk(managers: Sequence[Any]) -> bool:
    """Register the levelling plugin on these runners' plugin managers (once each); False when there is none."""
    managers = [m for m in managers if m is not None and callable(getattr(m, "register_plugin", None))]
    if not managers:
        return False
    for manager in managers:
        if manager.get_plugin(PLUGIN_NAME) is None:
            manager.register_plugin(_plugin())
    return True
