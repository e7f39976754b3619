"""Read-out time by size: ``str(cmp)``, ``cmp.verdict()``, the CLI's text and the report, on 13 cases and on 300.

Issue #39: on 4 agents × 13 cases × 3 trials, ``str(cmp)`` took 71–145 s (SciPy's Wilcoxon falling
back to a permutation test for every pair and metric), while the same call on 300 cases took 3 s.
The read-out must cost no more on small data than on large. This script builds the travel-assistant
comparison from the issue (a careful agent, a hasty one that is worse on every metric, cheaper and
crashes on one case, and two in between), at several sizes, runs it once, then times each read-out
on a fresh ``Comparison`` over the same results (nothing cached between timings), and prints the
times side by side with the ratio to the largest size.

    python bench/bench_readout.py                 # 13 and 300 cases, 3 trials
    python bench/bench_readout.py --sizes 13 50 300 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import levelfield as lf
from levelfield import Comparison
from levelfield.comparison._text import format_comparison

CITIES = [("Lisbon", "en"), ("Berlin", "de"), ("Madrid", "es"), ("東京", "ja"), ("Porto", "en"), ("München", "de"),
          ("Sevilla", "es"), ("大阪", "ja"), ("Paris", "en"), ("Hamburg", "de"), ("Valencia", "es"), ("京都", "ja"),
          ("Rome", "en")]
ASK = {"en": "Book a hotel in {c} for two nights and tell me the weather.",
       "de": "Buche ein Hotel in {c} für zwei Nächte und sag mir das Wetter.",
       "es": "Reserva un hotel en {c} para dos noches y dime el tiempo.",
       "ja": "{c}のホテルを二泊予約して、天気を教えてください。"}
SAY = {"en": "Booked a hotel in {c} for two nights; it will be sunny.",
       "de": "Hotel in {c} für zwei Nächte gebucht; es wird sonnig.",
       "es": "Hotel en {c} reservado para dos noches; hará sol.",
       "ja": "{c}のホテルを二泊予約しました。晴れです。"}
PRICES = {"careful-model": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
          "hasty-model": {"input_per_mtok": 0.2, "output_per_mtok": 1.0}}


def travel_dataset(n: int) -> list[dict]:
    rows = []
    for i in range(n):
        city, lang = CITIES[i % len(CITIES)]
        rows.append({"case_id": f"trip_{i:04d}", "prompt": ASK[lang].format(c=city),
                     "reference": SAY[lang].format(c=city),
                     "reference_trajectory": [{"tool_name": "search_hotels", "tool_input": {"city": city, "nights": 2}},
                                              {"tool_name": "book_hotel", "tool_input": {"city": city}},
                                              {"tool_name": "get_weather", "tool_input": {"city": city}}]})
    return rows


def make_agent(name: str, skill: float, model: str, crash_every: int = 0):
    """An agent that does each step right with probability ``skill`` (seeded by case and trial)."""
    rows = {}

    def agent(prompt: str) -> dict:
        case = rows.setdefault(prompt, len(rows))
        calls = agent.calls = getattr(agent, "calls", 0) + 1
        rng = random.Random(f"{name}:{prompt}:{calls}")
        if crash_every and case % crash_every == crash_every - 1:
            raise RuntimeError("booking backend timed out")
        city = next((c for c, _ in CITIES if c in prompt), "?")
        lang = next((lg for c, lg in CITIES if c in prompt), "en")
        traj = [{"tool_name": "search_hotels", "tool_input": {"city": city, "nights": 2 if rng.random() < skill else 1}}]
        if rng.random() < skill:
            traj.append({"tool_name": "book_hotel", "tool_input": {"city": city}})
        if rng.random() < skill:
            traj.append({"tool_name": "get_weather", "tool_input": {"city": city}})
        response = SAY[lang].format(c=city) if rng.random() < skill else f"{city}: done."
        return {"response": response, "predicted_trajectory": traj,
                "usage": {"input_tokens": 900, "output_tokens": 120, "model": model}}

    agent.__name__ = name
    return agent


METRICS = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_precision", "trajectory_recall",
           "rouge_l_sum", "exact_match"]


def build(n: int, trials: int) -> Comparison:
    agents = {"careful": make_agent("careful", 0.95, "careful-model"),
              "steady": make_agent("steady", 0.85, "careful-model"),
              "quick": make_agent("quick", 0.8, "hasty-model"),
              "hasty": make_agent("hasty", 0.7, "hasty-model", crash_every=13)}
    return lf.compare(travel_dataset(n), agents, metrics=METRICS, trials=trials, prices=PRICES, progress=False)


def fresh(cmp: Comparison) -> Comparison:
    """The same results in a new Comparison: nothing the last read-out computed is kept."""
    return Comparison(cmp.dataset, cmp.results, cmp.metrics, trials=cmp.trials, stats=cmp.stats, config=cmp.config)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[13, 300])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            cmp = build(n, args.trials)
            report = Path(tmp) / f"report_{n}.html"
            rows.append((n, {
                "str(cmp)": timed(lambda cmp=cmp: str(fresh(cmp)), args.repeat),
                "verdict()": timed(lambda cmp=cmp: fresh(cmp).verdict(), args.repeat),
                "CLI text": timed(lambda cmp=cmp: format_comparison(fresh(cmp)), args.repeat),
                "report": timed(lambda cmp=cmp, report=report: lf.report.write(fresh(cmp), report), args.repeat),
            }))
    names = list(rows[0][1])
    largest = rows[-1][1]
    print(f"read-out time, 4 agents × {args.trials} trials × {len(METRICS)} metrics, median of {args.repeat} (seconds)")
    print(f"{'cases':>6}  " + "  ".join(f"{name:>18}" for name in names))
    for n, times in rows:
        cells = [f"{times[k]:8.3f} ({times[k] / largest[k]:5.2f}×)" for k in names]
        print(f"{n:>6}  " + "  ".join(f"{c:>18}" for c in cells))
    print(f"(ratio: the time at that size over the time at {rows[-1][0]} cases)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
