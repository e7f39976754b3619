"""Judge answers on disk, one small JSON file per call, so a re-run does not pay twice."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core.data.jsonsafe import clean_strings, clean_text
from .._core.errors import MetricError
from .probability import TokenLogprob

__all__ = ["JudgeCache", "resolve_cache", "default_cache_dir"]

# Bump when the cached record's meaning changes, so old entries are not misread.
# 2: the key holds every setting of the judge model, and only usable answers are stored.
# 3: a function judge's key holds its code, not only its name.
_CACHE_VERSION = 3


class JudgeCache:
    """Judge answers on disk, one small JSON file per call, so a re-run does not pay twice.

    ``directory`` defaults to ``$LEVELFIELD_CACHE_DIR/judge`` or ``.levelfield-cache/judge`` under
    the working directory at the time of the call. Delete the directory to forget everything.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._directory = Path(directory) if directory is not None else None
        self._warned = False

    @property
    def directory(self) -> Path:
        return self._directory if self._directory is not None else default_cache_dir()

    @staticmethod
    def key(parts: Mapping[str, Any]) -> str:
        """A stable hash of everything that determines the judge's answer."""
        blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer ``{"text": str, "parsed": dict | None}``, or None: a miss, and so is
        a record of the wrong shape (a hand-edited, truncated or older file), which is asked again."""
        try:
            with self._path(key).open(encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("version") != _CACHE_VERSION:
            return None
        text, parsed = record.get("text"), record.get("parsed")
        if not isinstance(text, str) or not (parsed is None or isinstance(parsed, dict)):
            return None
        return {"text": clean_text(text), "parsed": clean_strings(parsed), "logprobs": _logprobs_of(record.get("logprobs"))}

    def put(self, key: str, record: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write then rename, so a concurrent reader never sees half a file.
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({**record, "version": _CACHE_VERSION}, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only disk must not fail the evaluation
            if not self._warned:
                warnings.warn(f"levelfield: judge cache at {self.directory} is not writable ({exc}); going on without it", stacklevel=2)
                self._warned = True

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"


def _logprobs_of(saved: Any) -> list[TokenLogprob] | None:
    """Log-probabilities as the cache keeps them (``[token, logprob, [[alt, logprob], ...]]``), or None."""
    try:
        return [TokenLogprob(str(t), float(lp), tuple((str(a), float(b)) for a, b in top)) for t, lp, top in saved]
    except (TypeError, ValueError):
        return None


def default_cache_dir() -> Path:
    """``$LEVELFIELD_CACHE_DIR/judge``, else ``.levelfield-cache/judge`` under the working directory."""
    return Path(os.environ.get("LEVELFIELD_CACHE_DIR") or ".levelfield-cache") / "judge"


def resolve_cache(cache: bool | str | os.PathLike[str] | JudgeCache | None) -> JudgeCache | None:
    """The cache a judged metric's ``cache=`` option names: True the default one, False/None none, a directory, or a :class:`JudgeCache`."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return JudgeCache()
    if isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise MetricError(f"cache must be True, False, a directory or a JudgeCache, got {type(cache).__name__}")
