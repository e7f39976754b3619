"""Cost of levelfield's own judging machinery, and what the judge concurrency limit and cache buy.

Three figures, all offline with scripted LangChain judges:
1. overhead: rows scored per second by a PointwiseMetric whose judge answers instantly (no
   cache), i.e. rendering, the LangChain call path, parsing and bookkeeping; and with a warm
   on-disk cache (no judge call at all).
2. concurrency: wall time to judge N rows with a judge that takes a fixed delay per answer,
   at several ``JudgeConfig(concurrency=...)`` limits; the ideal is ``ceil(N / limit) * delay``.

    python bench/bench_judge.py [--rows 500] [--delay 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import levelfield as lf
from levelfield._core.score.batch import score_rows
from levelfield._core.score.metrics.base import ScoringContext
from levelfield.testing import ScriptedChatModel


class DelayedJudge(BaseChatModel):
    """Answers 'score: 1' after ``delay`` seconds, like a remote model with fixed latency."""

    delay: float = 0.02

    @property
    def _llm_type(self) -> str:
        return "bench-delayed-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="score: 1"))])


def contexts(n: int) -> list[ScoringContext]:
    return [
        ScoringContext(
            case_id=f"case{i}",
            prompt=f"Turn on device_{i}.",
            response=f"device_{i} is now on.",
            predicted_trajectory=[
                lf.ToolCall(tool_name="set_device_info", tool_input={"device_id": f"device_{i}", "updates": {"status": "ON"}}, tool_output="ok")
            ],
        )
        for i in range(n)
    ]


def timed(metric: lf.metrics.PointwiseMetric, rows: list[ScoringContext]) -> float:
    start = time.perf_counter()
    out = asyncio.run(score_rows(rows, [metric], concurrency=10_000))
    elapsed = time.perf_counter() - start
    assert all(r[metric.name].value == 1.0 for r in out), "every row should score 1"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.02)
    args = parser.parse_args()
    rows = contexts(args.rows)
    template = lf.metrics.judged.RESPONSE_FOLLOWS_TRAJECTORY

    instant = ScriptedChatModel(lambda messages: '{"explanation": "ok", "score": "1"}', model_name="bench")
    for mode in (False, True):
        m = lf.metrics.PointwiseMetric("m", template, instant, judge_config=lf.JudgeConfig(cache=False, structured_output=mode))
        t = timed(m, rows)
        label = "structured" if mode else "text"
        print(f"overhead, instant judge, {label:10s}: {args.rows / t:8.0f} rows/s ({1e3 * t / args.rows:.2f} ms/row)")
    with tempfile.TemporaryDirectory() as cache:
        m = lf.metrics.PointwiseMetric("m", template, instant, judge_config=lf.JudgeConfig(cache=cache, structured_output=False))
        cold = timed(m, rows)
        warm = timed(lf.metrics.PointwiseMetric("m", template, instant, judge_config=lf.JudgeConfig(cache=cache, structured_output=False)), rows)
        print(f"cache, cold (call + write)          : {args.rows / cold:8.0f} rows/s")
        print(f"cache, warm (no judge call)         : {args.rows / warm:8.0f} rows/s ({1e3 * warm / args.rows:.2f} ms/row)")

    n = min(args.rows, 200)
    for limit in (1, 8, 32):
        m = lf.metrics.PointwiseMetric(
            "m", template, DelayedJudge(delay=args.delay), judge_config=lf.JudgeConfig(cache=False, concurrency=limit)
        )
        t = timed(m, rows[:n])
        ideal = math.ceil(n / limit) * args.delay
        print(f"concurrency {limit:3d}: {n} rows x {args.delay * 1e3:.0f} ms judge in {t:6.2f} s (ideal {ideal:5.2f} s)")


if __name__ == "__main__":
    main()
