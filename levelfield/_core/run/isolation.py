"""Process isolation: agents run in worker processes, so a crash kills a worker, not the evaluation.

With ``RunConfig(isolation="process")`` the runner sends each run to a worker process. Workers
are forked from multiprocessing's ``forkserver`` (levelfield preloaded, so a worker starts in
milliseconds) where the OS has it; with ``spawn`` on Windows, or when an agent is defined in the
script being run (``__main__``, which only ``spawn`` re-imports). A worker's start-up, and the
loading of the agent in it (up to the run's timeout), are not counted in a run's timeout. ``os._exit``, a segfault in native
code, a leak that gets the worker killed: the run is recorded as failed (``error_type
"worker_died"``, with the exit code or signal) and a fresh worker takes the next one. A run past
its timeout has its worker killed, so a hung agent holds neither a slot nor a process.

Timeouts, retries and turns stay with the runner in this process; a worker only answers "run
this request with that agent". All the turns of a case go to one worker, so an agent that keeps
session state per ``session_id`` sees the whole conversation. Each worker holds its own copy of
every agent (unpickled on its first run there), so state shared between cases is not shared
between workers.

Agents must be picklable (a module-level function or object of an importable module), or given
as spec strings ``"pkg.mod:attr"`` (see ``levelfield.adapters.spec.SpecAgent``); anything else
is a :class:`ConfigError` before any run. Scripts that evaluate with process isolation need the
usual ``if __name__ == "__main__":`` guard, as with any ``spawn`` multiprocessing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import multiprocessing
import multiprocessing.connection
import pickle
import signal
import sys
import types
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..data.protocol import AgentRequest, AgentRunnable
from ..data.types import AgentOutput
from ..errors import AdapterError, AgentOutputError, ConfigError, WorkerError
from . import budget
from .failures import describe_error
from .retry import is_transient
from .threads import run_sync

__all__ = ["ProcessIsolation", "WorkerError", "check_picklable"]


# Seconds an agent's loading in a worker (its imports, its unpickling) may take outside the run's
# timeout: generous, as a worker's start is, yet an import that hangs still ends in a failed run.
_LOAD_WAIT = 60.0


class _Lease:
    """The worker that runs one case's turns (replaced if it dies or is killed)."""

    __slots__ = ("worker",)

    def __init__(self) -> None:
        self.worker: _Worker | None = None


_lease: contextvars.ContextVar[_Lease | None] = contextvars.ContextVar("levelfield_worker_lease", default=None)


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "it stopped answering"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class _Worker:
    """One worker process and the pipe to it."""

    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, list(sys.path)), name="levelfield-agent-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.loaded: set[str] = set()

    def wait_ready(self) -> bool:
        """Wait until the worker has started (blocking: run in a thread); False if it died instead."""
        try:
            ready = multiprocessing.connection.wait([self.conn, self.process.sentinel])
            return self.conn in ready and self.conn.recv() == ("ready",)
        except (EOFError, OSError):
            return False

    def call(self, message: tuple) -> tuple[str, Any]:
        """Send a request and wait for the reply or the worker's death (blocking: run in a thread)."""
        try:
            self.conn.send(message)
            ready = multiprocessing.connection.wait([self.conn, self.process.sentinel])
            if self.conn in ready:
                return "reply", self.conn.recv()
        except (EOFError, OSError):
            pass
        self.process.join(timeout=5)
        return "died", _exit_reason(self.process.exitcode)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()

    def stop(self) -> None:
        """Ask an idle worker to exit; kill it if it does not (blocking)."""
        with contextlib.suppress(Exception):
            self.conn.send(("stop",))
        self.process.join(timeout=2)
        if self.process.is_alive():
            self.kill()
            self.process.join(timeout=2)
        with contextlib.suppress(Exception):
            self.conn.close()


class _MainReferences(pickle.Pickler):
    """A pickler that notes functions and classes pickled by reference to ``__main__``."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.from_main: list[str] = []

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) == "__main__":
            self.from_main.append(getattr(obj, "__qualname__", repr(obj)))
        return NotImplemented


def _pickle_agent(agent: AgentRunnable) -> tuple[bytes, bool]:
    """The agent pickled, and whether it refers to ``__main__``; a ConfigError if it cannot be sent."""
    what = f"isolation='process': agent {agent.name!r} ({type(agent).__name__})"
    advice = (
        "Define it at module level in an importable module (not a lambda or a nested function), or give "
        "the agent as a spec string 'package.module:attr'"
    )
    buffer = io.BytesIO()
    pickler = _MainReferences(buffer)
    try:
        pickler.dump(agent)
    except Exception as exc:  # pickle raises PicklingError, TypeError, AttributeError...
        raise ConfigError(f"{what} cannot be sent to a worker process ({type(exc).__name__}: {exc}). {advice}") from None
    main = sys.modules.get("__main__")
    if pickler.from_main and not getattr(main, "__file__", None):
        raise ConfigError(
            f"{what} uses {pickler.from_main[0]!r}, defined in an interactive session (__main__ has no file), "
            f"which a worker process cannot import. {advice}"
        )
    return buffer.getvalue(), bool(pickler.from_main)


def check_picklable(agents: Sequence[AgentRunnable]) -> None:
    """Raise a ConfigError naming the first agent that cannot be sent to a worker process."""
    for agent in agents:
        _pickle_agent(agent)


def _context(from_main: bool) -> Any:
    if not from_main and "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Takes effect when the fork server starts: it imports levelfield once for every worker.
        context.set_forkserver_preload([__name__])
        return context
    return multiprocessing.get_context("spawn")


class _InWorker:
    """Stands for an agent in the runner; each ``arun`` is answered by a worker process."""

    def __init__(self, isolation: ProcessIsolation, name: str) -> None:
        self.name = name
        self._isolation = isolation

    async def arun(self, request: AgentRequest) -> AgentOutput:
        return await self._isolation.call(self.name, request)

    def __repr__(self) -> str:
        return f"InWorker({self.name!r})"


class ProcessIsolation:
    """Worker processes for one evaluation: started as runs need them, stopped by :meth:`aclose`."""

    def __init__(self, agents: Sequence[AgentRunnable]) -> None:
        pickled = {agent.name: _pickle_agent(agent) for agent in agents}
        self._blobs = {name: blob for name, (blob, _) in pickled.items()}
        self._context = _context(any(from_main for _, from_main in pickled.values()))
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._start_error = "it exited while starting"

    def wrap(self, agent: AgentRunnable) -> AgentRunnable:
        """The runnable the runner uses in place of ``agent``."""
        return _InWorker(self, agent.name)

    @contextlib.asynccontextmanager
    async def lease(self, name: str | None = None, wait: float | None = None) -> AsyncIterator[None]:
        """Keep one worker for the runs inside (the turns and retries of one case of agent ``name``);
        ``wait``: the run's timeout; the agent's loading may take the longer of it and ``_LOAD_WAIT``
        before it is left to the run's own call (under that timeout)."""
        lease = _Lease()
        # Started, and the agent loaded in it, before the case's timeouts begin: a worker's start-up
        # and the import of the agent's code are not the agent's time.
        lease.worker = await self._acquire()
        if name is not None and lease.worker is not None and name not in lease.worker.loaded:
            if not await run_sync(self._load, lease.worker, name, max(wait or 0.0, _LOAD_WAIT)):
                # Still loading (an import that hangs) or died loading: the run's own call, under its
                # timeout, loads it in a fresh worker and records what happens.
                self._discard(lease.worker)
                lease.worker = None
        token = _lease.set(lease)
        try:
            yield
        finally:
            _lease.reset(token)
            if lease.worker is not None:
                self._idle.append(lease.worker)

    async def _acquire(self) -> _Worker | None:
        """An idle worker, or a new one once it has started; None if it died starting."""
        if self._idle:
            return self._idle.pop()
        try:
            return await run_sync(self._start_worker)
        except Exception as exc:  # noqa: BLE001 - no process could be made: the runs fail, saying why
            self._start_error = f"{type(exc).__name__}: {exc}"
            return None

    def _start_worker(self) -> _Worker | None:
        # Blocking (in a thread): the first start also waits for the fork server to import levelfield.
        worker = _Worker(self._context)
        self._workers.add(worker)
        if worker.wait_ready():
            return worker
        self._discard(worker)
        return None

    def _load(self, worker: _Worker, name: str, wait: float | None) -> bool:
        """Load agent ``name`` in ``worker`` (blocking: run in a thread); False if not answered in ``wait`` s.
        A load that fails is left for the run: its call sends the agent again and fails with the reason."""
        try:
            worker.conn.send(("load", name, self._blobs[name]))
            ready = multiprocessing.connection.wait([worker.conn, worker.process.sentinel], timeout=wait)
            if worker.conn not in ready:
                return False
            if worker.conn.recv().get("loaded"):
                worker.loaded.add(name)
        except (EOFError, OSError):
            pass
        return True

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._workers.discard(worker)

    async def call(self, name: str, request: AgentRequest) -> AgentOutput:
        """Run ``request`` with agent ``name`` in the leased worker; the worker's fate decides the error."""
        lease = _lease.get()
        temporary = lease is None
        if lease is None:
            lease = _Lease()
        try:
            if lease.worker is None:
                lease.worker = await self._acquire()
            if lease.worker is None:
                raise AdapterError(
                    f"agent {name!r} on case {request.case_id!r}: a worker process could not be started "
                    f"({self._start_error})",
                    error_type="worker_died",
                )
            worker = lease.worker
            blob = None if name in worker.loaded else self._blobs[name]
            try:
                status, reply = await run_sync(worker.call, ("run", name, blob, request, budget.current()))
            except BaseException:
                # Cancelled (the run's timeout) while the worker still runs the agent: kill it, so a
                # hung agent holds no process; the next run gets a fresh worker.
                lease.worker = None
                self._discard(worker)
                raise
            if status == "died":
                lease.worker = None
                self._discard(worker)
                raise AdapterError(
                    f"agent {name!r} on case {request.case_id!r}: its worker process died ({reply})",
                    error_type="worker_died",
                )
            if reply.get("loaded"):
                worker.loaded.add(name)
            if "output" in reply:
                return reply["output"]
            text, error_type, transient, partial = reply["error"]
            raise WorkerError(text, error_type=error_type, partial=partial, transient=transient)
        finally:
            if temporary and lease.worker is not None:
                self._idle.append(lease.worker)

    async def aclose(self) -> None:
        """Stop every worker (idle ones are asked to exit; busy ones were killed when abandoned)."""
        workers = list(self._workers)
        self._workers.clear()
        self._idle.clear()

        def stop_all() -> None:
            for worker in workers:
                worker.stop()

        if workers:
            await run_sync(stop_all)


# -- the worker process ------------------------------------------------------------------------


def _worker_main(conn: Any, path: list[str]) -> None:
    """A worker's life: answer ``("load", agent name, pickled agent)`` and ``("run", agent name, pickled agent
    or None, request)`` until told to stop."""
    # The user's Ctrl-C reaches every process of the terminal's group: the parent decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.path[:] = path  # as the parent has it now (a fork server keeps the path it started with)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    conn.send(("ready",))
    agents: dict[str, Any] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            break
        except Exception as exc:  # noqa: BLE001 - a request that cannot be unpickled here
            _send(conn, {"loaded": False, "error": (f"the worker could not read the request: {exc}", "worker_setup", False, None)})
            continue
        if message[0] == "stop":
            break
        if message[0] == "load":
            _send(conn, {"loaded": _load_agent(agents, message[1], message[2]) is None})
            continue
        _, name, blob, request, spend = message
        with budget.spending(spend):  # the run's timeout left and response cap, as the runner has them
            reply = loop.run_until_complete(_answer(agents, name, blob, request))
        _send(conn, reply)
    with contextlib.suppress(Exception):
        loop.close()


def _load_agent(agents: dict[str, Any], name: str, blob: bytes | None) -> str | None:
    """Unpickle agent ``name`` into ``agents`` unless there; the reason when it cannot be loaded."""
    if name not in agents:
        try:
            agents[name] = pickle.loads(blob)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001
            text, _ = describe_error(exc)
            return f"agent {name!r} could not be loaded in a worker process: {text}"
    return None


async def _answer(agents: dict[str, Any], name: str, blob: bytes | None, request: AgentRequest) -> dict[str, Any]:
    problem = _load_agent(agents, name, blob)
    if problem is not None:
        return {"loaded": False, "error": (problem, "worker_setup", False, None)}
    try:
        output = await agents[name].arun(request)
        if not isinstance(output, AgentOutput):
            raise AgentOutputError(
                f"agent {name!r} returned {type(output).__name__} from arun(); an adapter must return AgentOutput"
            )
        return {"loaded": True, "output": output}
    except BaseException as exc:  # noqa: BLE001 - the agent's fault is the run's failure, never the worker's end
        text, error_type = describe_error(exc)
        partial = getattr(exc, "partial", None)
        return {
            "loaded": True,
            "error": (text, error_type, is_transient(exc), partial if isinstance(partial, AgentOutput) else None),
        }


def _send(conn: Any, reply: dict[str, Any]) -> None:
    try:
        conn.send(reply)
        return
    except Exception:  # noqa: BLE001
        pass  # e.g. an output whose raw framework object cannot be pickled: send it without
    for key in ("output",):
        if key in reply:
            reply[key] = reply[key].model_copy(update={"raw": None})
    if "error" in reply:
        text, error_type, transient, _ = reply["error"]
        reply["error"] = (text, error_type, transient, None)
    try:
        conn.send(reply)
    except Exception as exc:  # noqa: BLE001
        conn.send({"loaded": reply.get("loaded", False), "error": (
            f"the agent's answer could not be sent back from its worker process: {type(exc).__name__}: {exc}",
            "bad_output", False, None)})
