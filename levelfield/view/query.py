"""Which cases of a run a page shows: the filters and paging of ``levelfield view``, read from the URL.

Every filter is a query parameter, so a filtered, paged view is a link to share: ``q`` (text in
the case id, prompt, response or error), ``agent``, ``metric`` with ``below`` (a score under a
threshold), ``failed=1``, ``error`` (an error type), ``sort=score`` (lowest score first) and
``page``. Filtering runs on the index's arrays, server side: a run of 100,000 cases sends one page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from urllib.parse import urlencode

import numpy as np

from .index import RunIndex

__all__ = ["CaseQuery", "select_cases", "PER_PAGE", "page_of"]

PER_PAGE = 50
"""Cases (or changed cases) on one page."""


@dataclass
class CaseQuery:
    """The case filters of a run page, as its URL gives them."""

    q: str = ""
    agent: str = ""
    metric: str = ""
    below: float | None = None
    failed: bool = False
    error: str = ""
    sort: str = ""
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> CaseQuery:
        """The filters in ``params`` (a request's query); a value that does not parse is ignored."""
        below = _float(params.get("below", ""))
        return cls(
            q=params.get("q", "").strip()[:200],
            agent=params.get("agent", ""),
            metric=params.get("metric", ""),
            below=below,
            failed=params.get("failed", "") in ("1", "on", "true"),
            error=params.get("error", ""),
            sort=params.get("sort", "") if params.get("sort", "") in ("", "score") else "",
            page=max(_int(params.get("page", "1")) or 1, 1),
        )

    def link(self, **changes: object) -> str:
        """This query as a URL query string, with ``changes`` applied (``page`` back to 1 unless given)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["page"] = 1
        values.update(changes)
        kept = {k: ("1" if v is True else v) for k, v in values.items() if v not in ("", None, False) and not (k == "page" and v == 1)}
        return urlencode(kept)

    @property
    def active(self) -> bool:
        return bool(self.q or self.agent or (self.metric and self.below is not None) or self.failed or self.error)


def select_cases(index: RunIndex, query: CaseQuery) -> list[int]:
    """Positions of the cases ``query`` keeps, in the order it asks for."""
    n = len(index.case_ids)
    agents = [query.agent] if query.agent in index.agents else list(index.agents)
    keep = np.ones(n, dtype=bool)
    if query.metric in index.metrics and query.below is not None:
        below = np.zeros(n, dtype=bool)
        for agent in agents:
            scores = index.case_scores(query.metric, agent)
            below |= ~np.isnan(scores) & (scores < query.below)
        keep &= below
    if query.failed or query.error or query.q:
        wanted = set(agents)
        failed = np.zeros(n, dtype=bool)
        erred = np.zeros(n, dtype=bool)
        said = np.zeros(n, dtype=bool)
        text = query.q.lower()
        for run in index.runs.values():
            if run.agent not in wanted:
                continue
            if run.failure:
                failed[run.case] = True
                if (run.error_type or "error") == query.error:
                    erred[run.case] = True
            if text and text in run.text:
                said[run.case] = True
        if query.failed:
            keep &= failed
        if query.error:
            keep &= erred
        if text:
            said |= np.array([text in f"{c} {p}".lower() for c, p in zip(index.case_ids, index.case_prompts)], dtype=bool)
            keep &= said
    chosen = np.flatnonzero(keep)
    metric = query.metric if query.metric in index.metrics else (index.metrics[0] if index.metrics else "")
    if query.sort == "score" and metric and chosen.size:
        lowest = np.full(n, np.inf)
        for agent in agents:
            scores = index.case_scores(metric, agent)
            lowest = np.fmin(lowest, np.where(np.isnan(scores), np.inf, scores))
        chosen = chosen[np.argsort(lowest[chosen], kind="stable")]
    return [int(i) for i in chosen]


def page_of(items: list[int], page: int, per: int = PER_PAGE) -> tuple[list[int], int, int]:
    """(the items of ``page``, the page actually shown, the number of pages): a page past the end shows the last."""
    pages = max(math.ceil(len(items) / per), 1)
    page = min(max(page, 1), pages)
    return items[(page - 1) * per: page * per], page, pages


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None
