"""Fixtures shared by several test modules."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Iterator, Sequence

import pytest

from levelfield._core.results.journal import Journal


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal delivers it, however the suite was started. A suite started in the
    background by a non-interactive shell (``pytest &``, some CI runners) inherits SIGINT ignored,
    and so does every command it starts: the tests that press Ctrl-C (on an evaluation in this
    process, on a ``levelfield`` command they start) would see nothing happen and fail."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _same_examples_every_run()
    config.pluginmanager.register(GroupInNodeId(), "levelfield-xdist-group-in-node-id")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject's addopts): one worker a core, and one more on a machine of up to four
    cores. Much of the suite waits rather than computes (subprocesses starting, servers answering, Ray
    nodes and Chromium coming up, agents sleeping), so a worker a core leaves the cores idle for part
    of the run: on 2 cores, 3 workers ran the whole suite in 7 min 29 s where 2 took 8 min 1 s.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` and ``--maxprocesses`` still decide where they are set (None
    hands the choice to xdist)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 1 if cores <= 4 else cores


# Marker -> the xdist group its tests share: one worker runs them one after another. Two Chromiums at
# once would double the heaviest processes of the suite on a 2-core machine. A Ray test module's tests
# share one worker (one `ray.init` per module, or its own `ray start` nodes, each on its own ports and
# temp dir); the two Ray modules may run beside each other, each being most of a worker's time.
SHARED_WORKER = {"browser": "browser"}
BY_MODULE = ("ray",)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``, pyproject's addopts) each test is sent to whichever
    worker is free, except the tests of one xdist group, which one worker runs in turn: the tests
    of a marker in SHARED_WORKER, and the tests of a module that has a fixture of its own wider
    than a test (a server, a run, a graph built once), which would otherwise be built once in each
    worker. Runs before xdist's own hook, which reads the groups; without xdist it changes nothing."""
    for item in items:
        group = next((name for marker, name in SHARED_WORKER.items() if item.get_closest_marker(marker)), None)
        if group is None and (any(item.get_closest_marker(m) for m in BY_MODULE) or _has_wide_fixture_of_its_module(item)):
            group = item.nodeid.split("::", 1)[0]
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (every framework the test modules import, over a million objects in a
    worker of the whole suite) is frozen out of the garbage collector's scans: each full collection
    during the tests otherwise walks all of it again, seconds a time (gc.freeze, as CPython's docs
    suggest for a process that imports much up front). Objects the tests make are collected as ever."""
    gc.freeze()


class GroupInNodeId:
    """The xdist group carried to the scheduler, as pytest-xdist means to. An xdist worker under
    ``--dist loadgroup`` tells the scheduler a test's group by ending its node id in ``@group``; xdist
    3.8 writes that to ``item._nodeid``, which pytest 9.2 no longer reads (the id is ``item._id``, a
    NodeId; pytest-xdist issue #1386), so every group was split over the workers: each Ray module
    started its cluster in both workers, each browser module its Chromium, each module-wide fixture
    was built twice. Runs after xdist's own hook and adds the suffix only where it is missing, so a
    fixed xdist, or an older pytest, is left to do it."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup
            return
        try:
            from _pytest.nodeid import NodeId
        except ImportError:  # a pytest before structured ids: xdist's own suffix took
            return
        for item in items:
            names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                            for mark in item.iter_markers("xdist_group")})
            nodeid = item.nodeid
            if names and nodeid.rfind("@") <= nodeid.rfind("]") and isinstance(getattr(item, "_id", None), NodeId):
                item._id = NodeId.parse(f"{nodeid}@{'_'.join(names)}")  # xdist's form, which its scheduler splits


def _has_wide_fixture_of_its_module(item: pytest.Item) -> bool:
    module = getattr(getattr(item, "module", None), "__name__", None)
    info = getattr(item, "_fixtureinfo", None)
    if module is None or info is None:
        return False
    return any(definition.scope != "function" and getattr(definition.func, "__module__", None) == module
               for definitions in info.name2fixturedefs.values() for definition in definitions)


def _same_examples_every_run() -> None:
    """The property tests try the same examples on every run (Hypothesis' own ``ci`` profile:
    derandomized, no example database, no deadline, no too-slow health check), wherever they run:
    a CI that sets no ``CI`` variable would otherwise draw new random examples each time, and a
    loaded machine could fail the health check. A property broken by a rarer example is found
    by running with ``--hypothesis-profile=default``."""
    try:
        from hypothesis import settings
    except ImportError:  # the property tests skip without it
        return
    settings.load_profile("ci")


class FullDisk:
    """A journal's file once the disk is full: lines of the ``refused`` kind (``"run"``, ``"case"``)
    fail with ENOSPC, the others are written."""

    def __init__(self, handle, refused: str) -> None:
        self._handle = handle
        self._marker = f'"kind":"{refused}"'
        self.closed = False

    def write(self, text):
        if self._marker in text:
            raise OSError(28, "No space left on device")
        return self._handle.write(text)

    def flush(self):
        self._handle.flush()

    def tell(self):
        return self._handle.tell()

    def fileno(self):
        return self._handle.fileno()

    def close(self):
        self.closed = True
        self._handle.close()


def disk_full_for(monkeypatch: pytest.MonkeyPatch, refused: str) -> None:
    """Every journal opened from now on refuses the lines of the ``refused`` kind (see FullDisk)."""
    opened = Journal.__init__

    def init(self, path, handle, fingerprints):
        opened(self, path, FullDisk(handle, refused), fingerprints)

    monkeypatch.setattr(Journal, "__init__", init)


@pytest.fixture(autouse=True)
def own_cache_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                     request: pytest.FixtureRequest) -> None:
    """Each test its own levelfield cache folder (``LEVELFIELD_CACHE_DIR``, made only when written): a limit one
    test's endpoint taught (``levelfield._core.run.learned``) or a judge's answers never reach another test, nor
    the working directory. A test that sets the variable itself wins."""
    base = tmp_path_factory.getbasetemp() / "levelfield-cache"
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(base / str(abs(hash(request.node.nodeid)))))


@pytest.fixture
def fresh_heap() -> None:
    """gc sees only the objects made during the test: those alive before it (in a worker of the whole
    suite, millions, from every framework imported so far) are frozen out of its scans, as collection's
    are (pytest_collection_finish). A test that counts live objects with ``gc.get_objects()`` counts
    what it made, and its ``gc.collect()`` takes milliseconds instead of seconds. Not unfrozen after:
    that would unfreeze collection's objects too; the garbage is collected first, so only what was
    alive stays."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def unwritable_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run line of a journal fails to write (a full disk), after its header and cases."""
    disk_full_for(monkeypatch, "run")


@contextlib.contextmanager
def mlflow_store(path) -> Iterator[str]:
    """MLflow pointed at a fresh SQLite store at ``path``, traces written synchronously; everything
    MLflow keeps process-wide put back after: the tracking URI, the active experiment (a module
    global and MLFLOW_EXPERIMENT_ID, which ``set_experiment`` sets), MLFLOW_TRACKING_URI (which
    ``set_tracking_uri`` sets) and the tracer. Without it a later test traces into an experiment
    its own store does not have, and its traces are lost."""
    import mlflow
    import mlflow.tracking._tracking_service.utils as tracking_utils
    import mlflow.tracking.fluent as fluent

    keys = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING")
    saved = {key: os.environ.get(key) for key in keys}
    # The URI as set, None when never set (get_tracking_uri() would give the default resolved, and
    # setting that back would hide a later MLFLOW_TRACKING_URI).
    previous, active = tracking_utils._tracking_uri, fluent._active_experiment_id
    uri = f"sqlite:///{path}"
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(uri)
    try:
        yield uri
    finally:
        mlflow.set_tracking_uri(previous)  # None: unset again
        fluent._active_experiment_id = active
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        mlflow.tracing.reset()


def traced_home_agent(prompts: Sequence[str], answer: Callable[[int], str],
                      wrong: Callable[[int], bool] = lambda room: False) -> Callable[[str], str]:
    """A home agent traced with MLflow's tracing API into the current MLflow experiment: an AGENT span
    ``home_agent`` around one TOOL span ``set_light(room, on)``, where ``room`` is the request's place
    in ``prompts``, ``on`` is ``wrong(room)`` (the right call switches the light off) and the answer
    is ``answer(room)``."""
    import mlflow

    @mlflow.trace(span_type="TOOL")
    def set_light(room: int, on: bool) -> dict:
        return {"ok": True}

    @mlflow.trace(name="home_agent", span_type="AGENT")
    def agent(request: str) -> str:
        room = prompts.index(request)
        set_light(room=room, on=wrong(room))
        return answer(room)

    return agent
