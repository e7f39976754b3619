"""Tool cassettes: every tool call's answer, recorded once and replayed to every agent.

A cassette is a JSON Lines file. Its first line is the header ``{"levelfield_cassette": 1}``; each
further line is one call's answer ``{"case", "tool", "args", "output"}`` (or ``"error": {"type",
"message"}`` when the tool raised). A call is found by case, tool name and arguments in the
trajectory matcher's canonical form (``ToolCallMatcher().key``: key order ignored, ``1 == 1.0``,
``True`` apart from ``1``), so two frameworks that spell one call differently still meet one entry.
Entries are appended as they are recorded: a recording cut short keeps what it had.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, Literal

from .._core.errors import ConfigError, ConfigTypeError, RecordError

__all__ = ["ToolCassette", "CassetteError", "Entry", "CASSETTE_VERSION", "storable", "canonical_args"]

CASSETTE_VERSION = 1
Mode = Literal["record", "replay", "record_missing"]
MODES = ("record", "replay", "record_missing")
ON_MISSING = ("error", "live")


class CassetteError(RecordError):
    """A cassette that cannot be read or written: the message names the file and the entry."""


class Entry:
    """One recorded answer: the tool's output, or the error it raised."""

    __slots__ = ("output", "error")

    def __init__(self, output: Any = None, error: Mapping[str, str] | None = None) -> None:
        self.output = output
        self.error = dict(error) if error is not None else None


def _plain(value: Any) -> Any:
    """``value`` as JSON data, equal values equal (``1.0`` -> ``1``; tuples as lists)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise TypeError(f"{type(value).__name__} is not JSON data")


def canonical_args(args: Mapping[str, Any]) -> str:
    """The arguments as canonical JSON text (sorted keys, ``1.0`` as ``1``): what the fingerprint hashes."""
    return json.dumps(_plain(dict(args)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Keyed:
    """What the matcher's ``key`` reads of a call (a ToolCall costs ~30 us to build; this nothing)."""

    __slots__ = ("tool_name", "tool_input")

    def __init__(self, tool_name: str, tool_input: Mapping[str, Any]) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input


def call_key(case_id: str, tool: str, args: Mapping[str, Any]) -> tuple[str, Hashable]:
    """The in-memory key of a call: its case and the trajectory matcher's canonical key of (tool, args)."""
    global _MATCHER
    if _MATCHER is None:
        from .._core.score.matching import ToolCallMatcher

        _MATCHER = ToolCallMatcher()
    return case_id, _MATCHER.key(_Keyed(tool, args if isinstance(args, dict) else dict(args)))


_MATCHER: Any = None


def storable(output: Any) -> str | None:
    """Why ``output`` cannot be stored in a cassette (None: it can): it must be JSON data, finite numbers."""
    try:
        json.dumps(output, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"{type(output).__name__} output is not JSON data ({exc})"
    return None


class ToolCassette:
    """Recorded tool answers, for ``evaluate``/``compare(tools=...)``.

    Args:
        path: the cassette file (JSON Lines).
        mode: ``"record"`` runs every tool live and writes a new cassette (a call one agent already
            made in this evaluation is answered from that record); ``"replay"`` answers every call
            from the file without running the tool; ``"record_missing"`` replays what the file holds
            and records the rest.
        on_missing: under ``replay``, what answers a call the cassette lacks: ``"error"`` (the agent
            sees a tool error saying so), ``"live"`` (the real tool runs; nothing is written), or a
            function ``fn(tool, args, case_id) -> output`` (a simulator; an exception it raises is the
            tool's error).
        overwrite: under ``record``, replace a cassette that already holds answers (without it, such
            a file is refused: recording it again would lose them).
    """

    def __init__(self, path: str | Path, mode: Mode = "replay", *,
                 on_missing: str | Callable[[str, dict[str, Any], str], Any] = "error", overwrite: bool = False) -> None:
        if not isinstance(path, (str, Path)):
            raise ConfigTypeError(f"ToolCassette(path=...) takes a file path, got {type(path).__name__}")
        if mode not in MODES:
            raise ConfigError(f"ToolCassette(mode={mode!r}): expected one of {', '.join(MODES)}")
        if not callable(on_missing) and on_missing not in ON_MISSING:
            raise ConfigError(f"ToolCassette(on_missing={on_missing!r}): expected 'error', 'live' or a function "
                              "fn(tool, args, case_id) -> output")
        if on_missing != "error" and mode != "replay":
            raise ConfigError(f"ToolCassette(on_missing=...) applies under mode='replay'; mode={mode!r} records "
                              "every call it lacks")
        if overwrite and mode != "record":
            raise ConfigError(f"ToolCassette(overwrite=True) applies under mode='record'; mode={mode!r} keeps the file's "
                              "answers")
        self.path = Path(path)
        if mode == "record" and not overwrite:
            held = _entries_held(self.path)
            if held:
                raise CassetteError(
                    f"cassette {self.path} holds {held} recorded answer(s); mode='record' would replace them. Replay "
                    "it (mode='replay'), add what it lacks (mode='record_missing', --tools-mode record_missing), or "
                    "replace it: ToolCassette(path, mode='record', overwrite=True) (--tools-overwrite)")
        self.mode: Mode = mode
        self.on_missing = on_missing
        self._entries: dict[tuple[str, Hashable], Entry] = {}
        self._lines: dict[tuple[str, Hashable], str] = {}
        self._lock = threading.Lock()
        self._file: Any = None
        self._written = False  # the file was started (a second evaluation with this cassette appends)
        if self.path.is_dir():
            raise CassetteError(f"cassette {self.path}: is a folder, not a file; give the cassette's .jsonl file "
                                "(e.g. --tools tools.jsonl)")
        if mode == "replay" and not self.path.exists():
            raise CassetteError(f"cassette {self.path}: no such file; record it first with "
                                "ToolCassette(path, mode='record') (--tools-mode record)")
        if mode != "record" and self.path.exists():
            self._load()
        self.start_fingerprint = self.fingerprint()

    # -- reading ---------------------------------------------------------------------------
    def _load(self) -> None:
        raw = self.path.read_bytes()
        try:
            text = raw.decode("utf-8")
            if "\x00" in text:  # UTF-16 without its byte-order mark decodes, but is no cassette
                raise UnicodeDecodeError("utf-8", raw, text.index("\x00"), text.index("\x00") + 1, "a NUL byte")
        except UnicodeDecodeError as exc:
            said = " (it looks like UTF-16)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw[:64] else ""
            raise CassetteError(f"cassette {self.path}, byte {exc.start}: not UTF-8 text{said}, so not a cassette "
                                "levelfield wrote; record it again (--tools-mode record), or save it as UTF-8") from None
        lines = text.split("\n")
        if text and not text.endswith("\n"):
            raise CassetteError(f"cassette {self.path}, line {len(lines)}: the file ends in the middle of an entry "
                                "(cut off while it was written); record it again, or delete that line to keep the rest")
        if not text.strip():
            raise CassetteError(f"cassette {self.path}: the file is empty (no header line); record it again")
        for number, line in enumerate(lines[:-1], start=1):
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CassetteError(f"cassette {self.path}, line {number}: not JSON ({exc.msg}); record it again, "
                                    "or fix that line") from None
            if number == 1:
                version = data.get("levelfield_cassette") if isinstance(data, dict) else None
                if version != CASSETTE_VERSION:
                    what = "no levelfield_cassette header" if version is None else f"version {version!r}"
                    raise CassetteError(f"cassette {self.path}, line 1: {what}; this levelfield reads cassette version "
                                        f"{CASSETTE_VERSION}: record it again with this version")
                continue
            self._add_line(number, data, line)

    def _add_line(self, number: int, data: Any, line: str) -> None:
        where = f"cassette {self.path}, line {number}"
        if not isinstance(data, dict):
            raise CassetteError(f"{where}: an entry must be an object {{case, tool, args, output | error}}")
        for field, kind in (("case", str), ("tool", str), ("args", dict)):
            if not isinstance(data.get(field), kind):
                raise CassetteError(f"{where}: field {field!r} must be a {kind.__name__} "
                                    f"(got {type(data.get(field)).__name__})")
        if ("output" in data) == ("error" in data):
            which = "both" if "output" in data else "neither"
            raise CassetteError(f"{where}: an entry holds either 'output' or 'error', not {which}")
        error = data.get("error")
        if error is not None and not (isinstance(error, dict) and isinstance(error.get("message"), str)):
            raise CassetteError(f"{where}: field 'error' must be {{'type': str, 'message': str}}")
        key = call_key(data["case"], data["tool"], data["args"])
        if key in self._entries:
            raise CassetteError(f"{where}: a second entry for case {data['case']!r}, tool {data['tool']!r} with these "
                                "arguments; a call has one answer: delete one of them")
        self._entries[key] = Entry(data.get("output"), error)
        self._lines[key] = _canonical_line(data)

    def get(self, case_id: str, tool: str, args: Mapping[str, Any]) -> Entry | None:
        """The recorded answer of this call, or None."""
        return self._entries.get(call_key(case_id, tool, args))

    def get_key(self, key: tuple[str, Hashable]) -> Entry | None:
        """The recorded answer of the call with this ``call_key``, or None."""
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def fingerprint(self) -> str:
        """A hash of every entry (its canonical form, in any order): two cassettes with the same answers share it."""
        digest = hashlib.sha256()
        for line in sorted(self._lines.values()):
            digest.update(line.encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()[:16]

    # -- writing ---------------------------------------------------------------------------
    def put(self, case_id: str, tool: str, args: Mapping[str, Any], entry: Entry) -> None:
        """Record an answer (appended to the file at once). A CassetteError, naming the file and
        the entry, when the output cannot be stored."""
        data: dict[str, Any] = {"case": case_id, "tool": tool, "args": _safe_args(args)}
        if entry.error is not None:
            data["error"] = entry.error
        else:
            why = storable(entry.output)
            if why is not None:
                raise CassetteError(f"cassette {self.path}: cannot store the answer of tool {tool!r} in case "
                                    f"{case_id!r} (arguments {canonical_args(data['args'])}): {why}; make the tool "
                                    "return JSON data "
                                    "(str, numbers, lists, dicts)")
            data["output"] = entry.output
        key = call_key(case_id, tool, args)
        line = json.dumps(data, ensure_ascii=False, allow_nan=False)
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = entry
            self._lines[key] = _canonical_line(data)
            self._write(line)

    def _write(self, line: str) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not self._written and (self.mode == "record" or not self.path.exists())
            self._written = True
            self._file = open(self.path, "w" if fresh else "a", encoding="utf-8")
            if fresh:
                self._file.write(json.dumps({"levelfield_cassette": CASSETTE_VERSION}) + "\n")
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file (entries are flushed as they are written)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def describe(self) -> dict[str, Any]:
        """What the run record keeps of it: path, mode and a fingerprint: of the answers replayed, or, when
        recording, of what the cassette holds now (what was written; ``start_fingerprint`` is where it began)."""
        if self.mode == "replay":
            return {"path": str(self.path), "mode": self.mode, "fingerprint": self.start_fingerprint}
        with self._lock:
            now = self.fingerprint()
        return {"path": str(self.path), "mode": self.mode, "fingerprint": now, "start_fingerprint": self.start_fingerprint}

    def __repr__(self) -> str:
        return f"ToolCassette({str(self.path)!r}, mode={self.mode!r}, entries={len(self)})"


def _entries_held(path: Path) -> int:
    """How many entries (lines after the header) the file at ``path`` holds; 0 when there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            return sum(1 for number, line in enumerate(f) if number and line.strip())
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError):
        return 1  # unreadable as a cassette, but not empty: never replaced unasked


def _safe_args(args: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return _plain(dict(args))
    except TypeError:
        # Arguments a model sends are JSON; anything else (an injected object) is kept by its text.
        return {str(k): (v if storable(v) is None else repr(v)) for k, v in args.items()}


def _canonical_line(data: Mapping[str, Any]) -> str:
    body = {k: data[k] for k in ("case", "tool", "output", "error") if k in data}
    body["args"] = json.loads(canonical_args(data["args"]))
    return json.dumps(_finite(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value
