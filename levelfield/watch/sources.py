"""Sources besides the OTLP receiver: a folder of trace files (inference-table exports), an MLflow experiment.

A new file is read once it has stopped growing (same size and modification time at two polls in a
row); it is marked done in ``out/state/folder.json`` only when every trace in it is journaled, so a
file being scored when the watcher is killed is read again at the next start, and the traces it
already journaled are skipped by their id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from functools import partial
from pathlib import Path
from typing import Any

from .._core.errors import ConfigError, DatasetError, LevelfieldError
from .._core.results.writing import write_text
from .sampling import mapping_attributes, span_attributes
from .windows import journaled_ids

__all__ = ["FolderSource", "MlflowSource", "read_trace_file"]

log = logging.getLogger("levelfield.watch")
SUFFIXES = (".jsonl", ".json", ".parquet")


def read_trace_file(path: Path) -> list[Any]:
    """The cases of one file: traces (MLflow, OTLP JSON, ... via ``load_traces``), else dataset rows
    holding saved answers (an inference table's ``request``/``response`` columns, via ``load_dataset``)."""
    from ..formats.files import load_dataset
    from ..formats.traces import load_traces

    try:
        return list(load_traces(path))
    except DatasetError as exc:
        if "cannot tell what kind of trace" not in str(exc):
            raise
    return list(load_dataset(path))


class FolderSource:
    """Picks up new trace files in a folder; see the module docs."""

    def __init__(self, watcher: Any, folder: str | Path) -> None:
        self.watcher = watcher
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise ConfigError(f"folder={str(folder)!r}: no such folder to watch for trace files")
        self.state_path = watcher.out / "state" / "folder.json"
        self.state: dict[str, dict[str, Any]] = {}
        if self.state_path.exists():
            try:
                self.state = json.loads(self.state_path.read_text(encoding="utf-8"))
            except ValueError:
                self.state = {}  # written atomically; unreadable only if edited by hand: start over, ids dedupe
        self._seen: dict[str, tuple[int, int]] = {}
        self._pending: dict[str, int] = {}
        unfinished = [s["picked_at"] for s in self.state.values() if not s.get("done") and "picked_at" in s]
        if unfinished:  # files a previous run had not finished: what it journaled from them is skipped
            now = time.time()
            for tid in journaled_ids(watcher.out, min(unfinished) - 1):
                watcher._closed.setdefault(tid, now)

    async def poll(self) -> None:
        for path in sorted(self.folder.iterdir()):
            if path.name.startswith(".") or path.suffix not in SUFFIXES or not path.is_file():
                continue
            name = path.name
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns)
            known = self.state.get(name)
            if name in self._pending or (known and known.get("done") and (known["size"], known["mtime_ns"]) == sig):
                continue
            if self._seen.get(name) != sig:
                self._seen[name] = sig  # still being written, or new: read it once it stops changing
                continue
            await self._read(path, sig)

    async def _read(self, path: Path, sig: tuple[int, int]) -> None:
        name = path.name
        entry = {"size": sig[0], "mtime_ns": sig[1], "picked_at": time.time(), "done": False}
        try:
            cases = await asyncio.to_thread(read_trace_file, path)
        except (LevelfieldError, OSError) as exc:
            log.error("levelfield watch: cannot read %s: %s", path, exc)
            self.state[name] = {**entry, "done": True, "error": str(exc)}
            self._save()
            return
        self.state[name] = entry
        self._save()
        count = 0
        rules = self.watcher.sampler.deferred
        for case in cases:
            attributes = mapping_attributes(case.metadata) if rules else None  # an inference table's columns
            if self.watcher.submit_case(case.case_id, case, release=partial(self._one_done, name), attributes=attributes):
                count += 1
        self._pending[name] = count
        if count == 0:
            self._finish(name)

    def _one_done(self, name: str) -> None:
        self._pending[name] -= 1
        if self._pending[name] == 0:
            self._finish(name)

    def _finish(self, name: str) -> None:
        del self._pending[name]
        self.state[name]["done"] = True
        self._save()

    def _save(self) -> None:
        write_text(self.state_path, json.dumps(self.state, indent=1))

    def close(self) -> None:
        pass


class MlflowSource:
    """Polls an MLflow experiment for traces that finished since the last poll.

    The cursor (``out/state/mlflow.json``: the trace timestamp up to which every trace is
    journaled) moves only past traces already journaled, so a restart polls again from there and
    skips, by id, the traces it journaled.
    """

    def __init__(self, watcher: Any, experiment: str, tracking_uri: str | None = None, *, page: int = 500) -> None:
        try:
            from mlflow import MlflowClient
        except ImportError:
            from .._core.errors import MissingExtraError

            raise MissingExtraError("mlflow", "mlflow-skinny", "levelfield watch --mlflow-experiment") from None
        self.watcher = watcher
        try:
            self.client = MlflowClient(tracking_uri)
            found = self.client.get_experiment_by_name(experiment)
        except Exception as exc:  # an unknown scheme, a server that does not answer
            from .._core.errors import exception_text

            raise ConfigError(f"mlflow_experiment={experiment!r}: cannot reach MLflow at {tracking_uri!r} "
                              f"({exception_text(exc)})") from None
        if found is None:
            raise ConfigError(f"mlflow_experiment={experiment!r}: no such experiment at {self.client.tracking_uri}")
        self.experiment_id = found.experiment_id
        self.page = page
        self.state_path = watcher.out / "state" / "mlflow.json"
        state: dict[str, Any] = {}
        if self.state_path.exists():
            try:
                state = json.loads(self.state_path.read_text(encoding="utf-8"))
            except ValueError:
                state = {}
        self.since_ms = int(state.get("since_ms", 0)) if state.get("experiment_id") == self.experiment_id else 0
        if "saved_at" in state:
            now = time.time()
            for tid in journaled_ids(watcher.out, float(state["saved_at"]) - 1):
                watcher._closed.setdefault(tid, now)
        self._seen: set[str] = set()
        self._inflight: dict[str, int] = {}  # trace id -> its timestamp (ms)
        self._newest = self.since_ms

    def _fetch(self) -> list[Any]:
        return list(self.client.search_traces(
            locations=[self.experiment_id], filter_string=f"trace.timestamp_ms >= {self.since_ms}",
            order_by=["timestamp_ms ASC"], max_results=self.page))

    async def poll(self) -> None:
        from ..formats.mlflow import row_from_trace

        traces = await asyncio.to_thread(self._fetch)
        for trace in traces:
            info = trace.info
            tid = info.trace_id
            if tid in self._seen or str(getattr(info, "state", "OK")).endswith("IN_PROGRESS"):
                continue  # already taken, or not finished yet: polled again
            self._seen.add(tid)
            at = info.timestamp_ms + (info.execution_time_ms or 0)
            row = await asyncio.to_thread(row_from_trace, trace)
            attributes = _mlflow_attributes(trace) if self.watcher.sampler.deferred else None
            if self.watcher.submit_case(tid, row, at=at / 1000, release=partial(self._one_done, tid), mlflow_id=tid,
                                        attributes=attributes):
                self._inflight[tid] = info.timestamp_ms
            self._newest = max(self._newest, info.timestamp_ms)
        self._advance()

    def _one_done(self, tid: str) -> None:
        self._inflight.pop(tid, None)
        self._advance()

    def _advance(self) -> None:
        # Every trace older than the oldest one still being scored is journaled.
        cursor = min(self._inflight.values(), default=self._newest)
        if cursor != self.since_ms:
            self.since_ms = cursor
            write_text(self.state_path, json.dumps({"experiment_id": self.experiment_id, "since_ms": cursor,
                                                    "saved_at": time.time()}))

    def close(self) -> None:
        pass


def _mlflow_attributes(trace: Any) -> dict[str, set[str]]:
    """What the sampling rules match on an MLflow trace: its tags and metadata, its root span's name
    (the trace name) and its agents."""
    from .._core.errors import TraceError
    from ..formats.mlflow import spans_from_trace

    info = trace.info
    out = mapping_attributes(getattr(info, "tags", None), getattr(info, "trace_metadata", None))
    try:
        _, spans = spans_from_trace(trace)
    except TraceError:
        return out
    for key, values in span_attributes(spans).items():
        out.setdefault(key, set()).update(values)
    return out
