"""Levelling one tool call: answer it from the cassette or the comparison's shared record, or run
the tool (recording its answer), then apply the run's seeded fault; note the call on the run.

Framework interceptors (``intercept_*``) call :func:`call_tool` / :func:`acall_tool` (or, where the
framework runs the tool between two callbacks, :func:`begin` and the :class:`Call` it returns).
Which run a call serves comes from the runner's :class:`~levelfield._core.run.scope.RunScope`:
concurrent runs of one graph each meet their own case's answers and faults.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._core.run.scope import RunScope, current_scope
from .cassette import CassetteError, Entry, ToolCassette, call_key
from .faults import Faults, faulted_output, raise_fault

__all__ = ["Leveller", "Call", "begin", "call_tool", "acall_tool", "ReplayedToolError", "ToolNotRecordedError"]

_LIVE = object()
"""``Call.resolve``: no answer is known; run the tool."""


class ReplayedToolError(RuntimeError):
    """A tool error answered from a record: raised as a subclass named like the error the tool raised."""


class ToolNotRecordedError(LookupError):
    """A call the cassette lacks, under ``replay`` with ``on_missing="error"``."""


_ERROR_CLASSES: dict[str, type[ReplayedToolError]] = {}
_ERROR_LOCK = threading.Lock()


def _replayed_error(error: Mapping[str, str]) -> BaseException:
    # Named as the recorded error was, so a framework that shows the error's type and message
    # (a ToolNode's "Error: ValueError('...')") shows every agent the same text.
    name = str(error.get("type") or "ToolError")
    if not name.isidentifier():
        name = "ToolError"
    with _ERROR_LOCK:
        cls = _ERROR_CLASSES.get(name)
        if cls is None:
            cls = _ERROR_CLASSES[name] = type(name, (ReplayedToolError,), {"__module__": __name__})
    return cls(error.get("message", ""))


class Leveller:
    """The tools of one evaluation levelled: a cassette (or none: live tools), faults (or none), and
    the record shared by every agent of a comparison."""

    def __init__(self, cassette: ToolCassette | None, faults: Faults | None, environment: Any = None) -> None:
        self.cassette = cassette
        self.faults = faults
        self.environment = environment
        """A :class:`~levelfield.tools.environment.ToolEnvironment` answering every call from the run's own state."""
        self._pending: dict[Any, concurrent.futures.Future[Entry]] = {}
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        """What the run record's header keeps (see ``check_levelling``)."""
        described = {"cassette": None if self.cassette is None else self.cassette.describe(),
                     "faults": None if self.faults is None else self.faults.describe()}
        if self.environment is not None:
            describe = getattr(self.environment, "describe", None)
            described["environment"] = describe() if callable(describe) else {"name": self.environment.name}
        return described

    def close(self) -> None:
        if self.cassette is not None:
            self.cassette.close()


class Call:
    """One levelled call in progress."""

    def __init__(self, leveller: Leveller, scope: RunScope, tool: str, args: Mapping[str, Any]) -> None:
        self.leveller = leveller
        self.scope = scope
        self.tool = tool
        self.args = dict(args)
        self.index = scope.next_index(tool)
        faults = leveller.faults
        self.fault = None if faults is None else faults.fault_for(scope.case_id, scope.trial, tool, self.index)
        self._claim: concurrent.futures.Future[Entry] | None = None
        self._key: Any = None
        self.event: dict[str, Any] = {"tool": tool, "index": self.index, "source": "live", "fault": self.fault}
        with scope.lock:
            if scope.tool_events is None:
                scope.tool_events = []
            scope.tool_events.append(self.event)

    # -- finding the answer ------------------------------------------------------------------
    def resolve(self) -> Entry | concurrent.futures.Future[Entry] | object:
        """The known answer (an Entry), a future answer another agent is recording now, or ``_LIVE``."""
        if self.leveller.environment is not None:
            return self._from_environment()
        cassette = self.leveller.cassette
        if cassette is None:
            return _LIVE
        case = self.scope.case_id
        try:
            self._key = call_key(case, self.tool, self.args)
        except Exception:  # noqa: BLE001 - arguments no matcher can key: the tool runs as it is
            return _LIVE
        with self.leveller._lock:
            entry = cassette.get_key(self._key)
            if entry is not None:
                self.event["source"] = "replayed"
                return entry
            pending = self.leveller._pending.get(self._key)
            if pending is not None:
                self.event["source"] = "replayed"
                return pending
            if cassette.mode == "replay":
                self.event["source"] = "missed"
                policy = cassette.on_missing
                if policy == "live":
                    return _LIVE
                if policy == "error":
                    return Entry(error={"type": "ToolNotRecordedError", "message": (
                        f"tool {self.tool!r} with arguments {self.args!r} in case {case!r} is not in cassette "
                        f"{cassette.path}: record it (mode='record_missing') or give on_missing='live' or a "
                        "simulator")})
                return self._simulate(policy)
            self._claim = self.leveller._pending[self._key] = concurrent.futures.Future()
            self.event["source"] = "recorded"
            return _LIVE

    def _from_environment(self) -> Entry:
        """The answer of this run's own environment session (opened at the run's first call)."""
        self.event["source"] = "environment"
        if self.fault in ("error", "timeout", "rate_limit"):
            return Entry()  # the call never reaches the world: the fault is all the agent meets
        scope = self.scope
        with scope.lock:
            session = scope.environment
            if session is None:
                session = scope.environment = self.leveller.environment.reset(scope.case_id, scope.trial)
        try:
            return Entry(session.call(self.tool, dict(self.args)))
        except Exception as exc:  # noqa: BLE001 - the environment's error is the tool's error
            return Entry(error={"type": type(exc).__name__, "message": str(exc)})

    def _simulate(self, simulator: Callable[[str, dict[str, Any], str], Any]) -> Entry:
        try:
            return Entry(simulator(self.tool, dict(self.args), self.scope.case_id))
        except Exception as exc:  # noqa: BLE001 - the simulator's error is the tool's error
            return Entry(error={"type": type(exc).__name__, "message": str(exc)})

    def finish(self, output: Any = None, error: BaseException | None = None) -> None:
        """The live tool answered (or raised): record it when this call records for the others."""
        if error is not None:
            with self.scope.lock:
                self.scope.raised.append(error)
        if self._claim is None:
            return
        entry = Entry(output) if error is None else Entry(error={"type": type(error).__name__, "message": str(error)})
        cassette = self.leveller.cassette
        assert cassette is not None
        try:
            cassette.put(self.scope.case_id, self.tool, self.args, entry)
        except CassetteError as exc:
            # Not the agent's to handle (a framework would turn it into a tool message): it fails the run.
            self.scope.fatal = exc
            self._settle(error=exc)
            raise
        self._settle(entry=entry)

    def _settle(self, entry: Entry | None = None, error: BaseException | None = None) -> None:
        claim, self._claim = self._claim, None
        if claim is None:
            return
        with self.leveller._lock:
            self.leveller._pending.pop(self._key, None)
        if error is not None:
            claim.set_exception(error)
        else:
            claim.set_result(entry)  # type: ignore[arg-type]

    def abandon(self) -> None:
        """The live call never answered (cancelled): others waiting on it run the tool themselves."""
        if self._claim is not None:
            self._settle(error=_Abandoned())

    # -- giving the answer -------------------------------------------------------------------
    def deliver(self, entry: Entry, *, live_error: BaseException | None = None, copied: bool = True) -> Any:
        """The answer the agent gets, faults applied (sleeping first for a ``slow`` one): returned or raised."""
        if self.fault == "slow":
            time.sleep(self._slow())
        return self._give(entry, live_error, copied)

    async def adeliver(self, entry: Entry, *, live_error: BaseException | None = None, copied: bool = True) -> Any:
        """:meth:`deliver` for async tools (a ``slow`` fault sleeps without blocking the loop)."""
        if self.fault == "slow":
            await asyncio.sleep(self._slow())
        return self._give(entry, live_error, copied)

    def _slow(self) -> float:
        faults = self.leveller.faults
        return 0.0 if faults is None else faults.slow_seconds

    def _give(self, entry: Entry, live_error: BaseException | None, copied: bool) -> Any:
        try:
            if self.fault is not None:
                raise_fault(self.fault, self.tool)
            if live_error is not None:
                raise live_error
            if entry.error is not None:
                raise _replayed_error(entry.error)
        except BaseException as exc:
            with self.scope.lock:
                self.scope.raised.append(exc)  # the run's failure, if it fails with it, is this tool's
            raise
        output = entry.output
        if copied and not isinstance(output, (str, int, float, bool, type(None))):
            output = copy.deepcopy(output)  # an agent that changes its answer must not change the next agent's
        if self.fault in ("empty", "malformed"):
            return faulted_output(self.fault, output)
        return output


class _Abandoned(Exception):
    pass


def begin(tool: str, args: Mapping[str, Any]) -> Call | None:
    """The levelled call of ``tool`` with ``args`` in the current run; None when no levelled run is in progress."""
    scope = current_scope()
    if scope is None or scope.leveller is None:
        return None
    return Call(scope.leveller, scope, tool, args)


def call_tool(tool: str, args: Mapping[str, Any], live: Callable[[], Any]) -> Any:
    """Call a sync tool levelled: ``live()`` runs it for real when nothing else answers."""
    call = begin(tool, args)
    if call is None:
        return live()
    while True:
        got = call.resolve()
        if isinstance(got, concurrent.futures.Future):
            if not got.done() and _on_event_loop():
                # A sync tool called on the event loop's thread: blocking here could starve the call that
                # records the answer (an async tool on this loop). The tool runs live; the event says so.
                call.event["source"] = "live"
                return _run_live_sync(call, live)
            try:
                return call.deliver(got.result())
            except _Abandoned:
                continue
        if isinstance(got, Entry):
            return call.deliver(got)
        return _run_live_sync(call, live)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_live_sync(call: Call, live: Callable[[], Any]) -> Any:
    try:
        output = live()
    except Exception as exc:
        call.finish(error=exc)
        return call.deliver(Entry(), live_error=exc)
    except BaseException:
        call.abandon()
        raise
    call.finish(output=output)
    return call.deliver(Entry(output), copied=False)


async def acall_tool(tool: str, args: Mapping[str, Any], live: Callable[[], Awaitable[Any]]) -> Any:
    """Call an async tool levelled: ``await live()`` runs it for real when nothing else answers."""
    call = begin(tool, args)
    if call is None:
        return await live()
    while True:
        got = call.resolve()
        if isinstance(got, concurrent.futures.Future):
            try:
                entry = await asyncio.wrap_future(got)
            except _Abandoned:
                continue
            return await call.adeliver(entry)
        if isinstance(got, Entry):
            return await call.adeliver(got)
        try:
            output = await live()
        except Exception as exc:
            call.finish(error=exc)
            return await call.adeliver(Entry(), live_error=exc)
        except BaseException:
            call.abandon()
            raise
        call.finish(output=output)
        return await call.adeliver(Entry(output), copied=False)
