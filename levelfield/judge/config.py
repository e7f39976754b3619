"""How a judged metric asks its judge: one ``JudgeConfig`` (samples, cache, concurrency, retries, backoff,
timeout, structured output), given to every judged metric and to the entry points alike::

    lf.metrics.PointwiseMetric("helpful", template, "openai:gpt-4o", judge_config=lf.JudgeConfig(samples=3))
    lf.evaluate(ds, agent, metrics=["safety_v1"], judge="openai:gpt-4o", judge_config=lf.JudgeConfig(timeout=30))

The defaults of the judge's calls are the client's (``levelfield.judge.client``), defined once there.
The options were keywords of every judged metric before; given as keywords now they are refused with
the ``JudgeConfig`` field to use (:func:`refuse_judge_keywords`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._core.errors import ConfigError, ConfigTypeError
from .cache import JudgeCache
from .client import JUDGE_BACKOFF, JUDGE_MAX_CONCURRENCY, JUDGE_RETRIES, JUDGE_TIMEOUT

__all__ = ["JudgeConfig", "MOVED_KEYWORDS", "judge_config", "refuse_judge_keywords"]


@dataclass(frozen=True)
class JudgeConfig:
    """How a judged metric asks its judge: how many times per row, whether answers are cached, and the
    judge's calls (how many at once, retries, backoff, timeout, structured output)."""

    samples: int | None = None
    """Times the judge is asked per row (the verdict is their majority or mean); None: the metric's own
    default (1; ADK's criteria 5, as ADK)."""
    cache: bool | str | os.PathLike[str] | JudgeCache = True
    """Where usable answers are kept between runs: True the default folder (``.levelfield-cache/judge``),
    False none, a folder, or a :class:`~levelfield.judge.JudgeCache`."""
    concurrency: int = JUDGE_MAX_CONCURRENCY
    """Judge calls in flight at once, per judge model (the ceiling when the run follows rate limits)."""
    retries: int = JUDGE_RETRIES
    """Retries of a judge call that hit a rate limit, a server error or a timeout."""
    backoff: float = JUDGE_BACKOFF
    """Seconds the first retry waits at most; doubles with each retry, the wait drawn uniformly below it."""
    timeout: float | None = JUDGE_TIMEOUT
    """Seconds per judge call (default 30); None for no timeout. A call cut by it is retried like a server
    error, so a judge that hangs fails its row after (retries + 1) x timeout seconds and the backoff between
    them: about 2 minutes at the defaults (30 s x 4 calls). A slow reasoning judge wants more (``timeout=120``);
    a test with a local judge, less."""
    structured_output: bool | None = None
    """True: ask the model for structured output (an error when it cannot give it); False: parse its text;
    None: the metric's own way (structured when the model offers it; ADK's criteria read text, as ADK)."""

    def __post_init__(self) -> None:
        def bad(option: str, value: Any, rule: str) -> ConfigError:
            return ConfigError(f"JudgeConfig({option}={value!r}): {rule}")

        def whole(value: Any, least: int) -> bool:
            return not isinstance(value, bool) and isinstance(value, int) and value >= least

        if self.samples is not None and not whole(self.samples, 1):
            raise bad("samples", self.samples, "must be a whole number >= 1, or None for the metric's default")
        if not (isinstance(self.cache, (bool, str, os.PathLike, JudgeCache))):
            raise bad("cache", self.cache, "must be True (the default folder), False (no cache), a folder or an "
                                           "lf.judge.JudgeCache")
        if not whole(self.concurrency, 1):
            raise bad("concurrency", self.concurrency, "must be a whole number >= 1 (judge calls in flight at once)")
        if not whole(self.retries, 0):
            raise bad("retries", self.retries, "must be a whole number >= 0")
        if isinstance(self.backoff, bool) or not isinstance(self.backoff, (int, float)) or not 0 <= self.backoff < math.inf:
            raise bad("backoff", self.backoff, "must be a number of seconds >= 0")
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))
                                         or not 0 < self.timeout < math.inf):
            raise bad("timeout", self.timeout, "must be a number of seconds > 0, or None for no timeout")
        if self.structured_output is not None and not isinstance(self.structured_output, bool):
            raise bad("structured_output", self.structured_output, "must be True, False or None (the metric's own way)")

    def replace(self, **options: Any) -> JudgeConfig:
        """A copy with some options changed (names checked)."""
        return judge_config(self, **options)

    def judge_settings(self, structured_output: bool | None = None) -> dict[str, Any]:
        """The settings of the judge's calls, as :func:`~levelfield.judge.resolve_judge` takes them;
        ``structured_output`` is the metric's own way, used when this config leaves it None."""
        chosen = self.structured_output if self.structured_output is not None else structured_output
        return {"max_concurrency": self.concurrency, "retries": self.retries, "backoff": self.backoff,
                "timeout": self.timeout, "structured_output": chosen}


MOVED_KEYWORDS = {"num_samples": "samples", "cache": "cache", "max_concurrency": "concurrency", "retries": "retries",
                  "backoff": "backoff", "timeout": "timeout", "structured_output": "structured_output"}
"""The keywords judged metrics took before ``JudgeConfig``, by the field that holds each now."""


def judge_config(config: JudgeConfig | None = None, /, **options: Any) -> JudgeConfig:
    """``config`` (or the defaults) with ``options`` applied; a wrong kind of config or an unknown option is a clear error."""
    from .._core.data.config import options_applied

    return options_applied(JudgeConfig, config, options, argument="judge_config", kind="judge option")


def refuse_judge_keywords(owner: str, options: Mapping[str, Any]) -> None:
    """Refuse the judge's options given as keywords (``num_samples=3``), naming the ``JudgeConfig`` field to use;
    any other keyword is a ``TypeError`` as Python's own."""
    unknown = [k for k in options if k not in MOVED_KEYWORDS]
    if unknown:
        raise ConfigTypeError(f"{owner} got an unexpected keyword argument {unknown[0]!r}")
    moved = dict(options)
    if moved:
        given = ", ".join(f"{k}={v!r}" for k, v in moved.items())
        wanted = ", ".join(f"{MOVED_KEYWORDS[k]}={v!r}" for k, v in moved.items())
        raise ConfigError(f"{owner}({given}): the judge's options go in one object, "
                          f"judge_config=lf.JudgeConfig({wanted})")
