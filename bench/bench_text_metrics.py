"""Speed of the text metrics with levelfield's Unicode-aware tokenizer.

Scores N reference/response pairs (English, German, Chinese, Japanese, Russian, Arabic, Thai
sentences with edits) through ``Rouge`` / ``ResponseMatchScore`` / ``Bleu``, and for scale:
rouge-score with its default (ASCII-only) tokenizer on the same pairs, and google-adk's own
``response_match_score`` routine when google-adk is installed. Prints microseconds per pair.

    python bench/bench_text_metrics.py [--pairs 20000]
"""

from __future__ import annotations

import argparse
import random
import time

from levelfield.core.score.metrics.base import ScoringContext
from levelfield.metrics import Bleu, ResponseMatchScore, Rouge

SENTENCES = [
    "The Living Room temperature is now set to your preferred 23 degrees.",
    "Die Heizung im Wohnzimmer läuft jetzt auf dreiundzwanzig Grad.",
    "今天北京的天气很好，气温二十五度，适合出门散步。",
    "東京の天気は晴れです。気温は二十度で、風は弱いです。",
    "Погода в Москве хорошая, температура двадцать градусов.",
    "الطقس في القاهرة مشمس ودرجة الحرارة ثلاثون.",
    "อากาศในกรุงเทพวันนี้ร้อนมากและมีแดดจัด",
]


def pairs(n: int, sentences: list[str] = SENTENCES) -> list[tuple[str, str]]:
    rnd = random.Random(0)
    out = []
    for _ in range(n):
        ref = rnd.choice(sentences)
        units = ref.split() if " " in ref else list(ref)
        if units and rnd.random() < 0.7:
            units.pop(rnd.randrange(len(units)))
        out.append((ref, (" " if " " in ref else "").join(units)))
    return out


def timed(label: str, fn, data: list[tuple[str, str]]) -> None:
    start = time.perf_counter()
    for ref, resp in data:
        fn(ref, resp)
    elapsed = time.perf_counter() - start
    print(f"{label:<52} {elapsed / len(data) * 1e6:8.1f} us/pair   ({elapsed:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--english", action="store_true", help="English sentences only (the ASCII fast path)")
    args = parser.parse_args()
    data = pairs(args.pairs, SENTENCES[:1] if args.english else SENTENCES)
    print(f"{len(data)} pairs, {'English only' if args.english else f'{len(SENTENCES)} scripts'}")

    def ctx(ref: str, resp: str) -> ScoringContext:
        return ScoringContext(case_id="c", prompt="p", response=resp, predicted_trajectory=[], reference=ref)

    for metric in (Rouge("rougeL"), ResponseMatchScore(), Bleu()):
        timed(f"levelfield {metric.name}", lambda r, p, m=metric: m.score(ctx(r, p)), data)

    from rouge_score.rouge_scorer import RougeScorer

    default = RougeScorer(["rougeL"])
    timed("rouge-score rougeL, default tokenizer (ASCII only)", lambda r, p: default.score(r, p), data)
    try:
        from google.adk.evaluation.final_response_match_v1 import _calculate_rouge_1_scores
    except ImportError:
        print("google-adk not installed: ADK's response_match_score not timed")
    else:
        timed("google-adk response_match_score routine", lambda r, p: _calculate_rouge_1_scores(p, r), data)


if __name__ == "__main__":
    main()
