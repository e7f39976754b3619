"""What pointwise and pairwise judged metrics share: resolving their judge and cache from the metric's settings, and asking once per sample.

Each sample is its own cache entry, so a re-run replays all of a metric's answers; the samples of
one row are asked concurrently, within the judge's own concurrency limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..errors import MetricError
from .judge_client import JudgeReply, _resolve_cache, resolve_judge

__all__: list[str] = []


class _Judging:
    """What pointwise and pairwise metrics share: a judge, sampling and the cache."""

    name: str

    def _setup_judging(
        self,
        judge: Any,
        *,
        num_samples: int,
        cache: Any,
        max_concurrency: int,
        retries: int,
        backoff: float,
        timeout: float | None,
        structured_output: bool | None,
    ) -> None:
        if not isinstance(num_samples, int) or num_samples < 1:
            raise MetricError(f"metric {self.name!r}: num_samples must be a positive int, got {num_samples!r}")
        self.judge = resolve_judge(
            judge,
            metric=self.name,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )
        self.num_samples = num_samples
        self.cache = _resolve_cache(cache)

    async def _ask_all(self, prompts: Sequence[str], schema: dict[str, Any]) -> list[JudgeReply]:
        # Each sample is its own cache entry, so a re-run replays all n answers.
        return list(
            await asyncio.gather(
                *(
                    self.judge.ask(p, schema, cache=self.cache, settings={"sample": i, "of": self.num_samples})
                    for i, p in enumerate(prompts)
                )
            )
        )
