"""Limits learned per endpoint, kept between runs: where an endpoint's adaptive limit starts next time.

An evaluation that met an endpoint's limit (it refused calls for capacity: not the per-request refusals
of a gateway that refuses each request's first call) keeps the limit its calls ran at when it ended in
``limits.json`` in levelfield's cache folder (``$LEVELFIELD_CACHE_DIR``, else ``.levelfield-cache`` in the
working directory, beside the judge's cache), by endpoint: ``agent <name>``, ``a2a http://host:port``,
``judge <model>``, ``simulator <model>``. The next evaluation's limit of that endpoint starts there
instead of at its first-contact start, and probes past it slowly. An endpoint that later carried its
whole ``concurrency`` without refusing a call is kept as such instead (``"carried": true``): the next
evaluation's limit starts at the calls it carried, not at half its ``concurrency`` (issue #56: a first
contact's start at half costs 2.5-5 % of a 2,000 x 50 ms run), and a refusal still cuts it at once.
Every endpoint is forgotten by :func:`forget` (``levelfield limits --forget``), or one by its name.

The file is small JSON, written whole and replaced at once (a run killed while writing leaves the last
one); an unreadable file is read as empty and rewritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["FILE", "carried", "forget", "learned", "path", "recall", "remember"]

FILE = "limits.json"


def path() -> Path:
    """The file learned limits are kept in: ``$LEVELFIELD_CACHE_DIR/limits.json``, else ``.levelfield-cache/limits.json``."""
    return Path(os.environ.get("LEVELFIELD_CACHE_DIR") or ".levelfield-cache") / FILE


def learned() -> dict[str, dict[str, Any]]:
    """Every learned limit, by endpoint: ``{"limit": n, "ceiling": c, "refused": k, "at": unix seconds}``, with
    ``"carried": true`` for an endpoint that carried ``n`` in flight without refusing a call."""
    try:
        data = json.loads(path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and isinstance(v.get("limit"), int) and v["limit"] >= 1}


def recall(endpoint: str, known: dict[str, dict[str, Any]] | None = None) -> int | None:
    """The limit ``endpoint`` was learned to carry in an earlier run (its capacity refused calls past it), or None."""
    entry = (learned() if known is None else known).get(endpoint)
    return None if entry is None or entry.get("carried") else int(entry["limit"])


def carried(endpoint: str, known: dict[str, dict[str, Any]] | None = None) -> int | None:
    """The calls in flight ``endpoint`` carried in an earlier run without refusing one (its whole ceiling), or None."""
    entry = (learned() if known is None else known).get(endpoint)
    return int(entry["limit"]) if entry is not None and entry.get("carried") else None


def _write(entries: dict[str, dict[str, Any]]) -> None:
    target = path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".limits-", suffix=".json", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entries, f, ensure_ascii=False, indent=1, sort_keys=True)
        os.replace(temp, target)
    except OSError:
        # A cache that cannot be written costs the next run its head start, never this run.
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(temp)


def remember(limits: Iterable[Any]) -> None:
    """Keep what each adaptive endpoint limit of an evaluation learned (see the module)."""
    entries = None
    changed = False
    for limit in limits:
        outcome = limit.lesson()
        if outcome is None:
            continue
        if entries is None:
            entries = learned()
        if outcome == "forget":
            changed |= entries.pop(limit.endpoint, None) is not None
            continue
        if outcome == "carried":
            before = entries.get(limit.endpoint)
            if before is not None and before.get("carried") and before.get("limit") == limit.ceiling:
                continue  # known already: not rewritten every run
            entries[limit.endpoint] = {"limit": limit.ceiling, "ceiling": limit.ceiling, "refused": 0, "carried": True,
                                       "at": round(time.time())}
            changed = True
            continue
        entries[limit.endpoint] = {"limit": int(outcome), "ceiling": limit.ceiling,
                                   "refused": limit.rate_limited - limit.per_request, "at": round(time.time())}
        changed = True
    if changed and entries is not None:
        _write(entries)


def forget(endpoint: str | None = None) -> list[str]:
    """Forget the limit learned for ``endpoint`` (every endpoint's when None); the endpoints forgotten."""
    entries = learned()
    gone = [e for e in entries if endpoint is None or e == endpoint]
    if gone:
        _write({k: v for k, v in entries.items() if k not in gone})
    return gone
