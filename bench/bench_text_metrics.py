"""Speed of the text metrics, side by side with rouge-score row by row and google-adk.

Rows are shaped as a comparison produces them: every case's reference is answered by 4 agents
x 3 trials (12 rows a case), so each reference repeats 12 times while responses mostly differ
(edits of the reference: a word dropped, two swapped, a word added; some answers exact).
Sentences are English, Portuguese, German, Chinese, Japanese and Russian.

For each size (default 1,000 and 20,000 rows), in one run:

* levelfield end to end, ``lf.evaluate(rows, metrics=...)`` on saved predictions, summary and
  table read: ``rouge_1``; ``rouge_l`` + ``bleu`` + ``exact_match``; ``response_match_score``;
* rouge-score row by row (``RougeScorer(["rouge1"]).score``; ``RougeScorer(["rougeL"])`` +
  ``sacrebleu.sentence_bleu`` + ``==``), with ADK's Unicode-aware tokenizer (the rule levelfield
  uses) when google-adk is installed, else rouge-score's default (ASCII-only) one;
* google-adk's ``response_match_score`` evaluator (``RougeEvaluator.evaluate_invocations``), one
  case at a time as ADK does, its ``Invocation``s built before the clock starts.

Prints cases/s and the ratios: the median of ``--repeats`` interleaved rounds.

    python bench/bench_text_metrics.py [--sizes 1000,20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

SENTENCES = [
    "The living room temperature is now set to your preferred 23 degrees.",
    "Your flight to Lisbon departs at 9:40 from terminal two, gate 14.",
    "A reserva para quatro pessoas foi confirmada para sexta-feira às oito horas.",
    "O pedido número 5521 foi enviado e chegará em três dias úteis.",
    "Die Heizung im Wohnzimmer läuft jetzt auf dreiundzwanzig Grad.",
    "Ihre Bestellung wurde storniert und der Betrag wird erstattet.",
    "今天北京的天气很好，气温二十五度，适合出门散步。",
    "您的订单已经发货，预计三天内送达。",
    "東京の天気は晴れです。気温は二十度で、風は弱いです。",
    "ご予約は金曜日の午後七時に確定しました。",
    "Погода в Москве хорошая, температура двадцать градусов.",
]
AGENTS, TRIALS = 4, 3
EXTRA = ["please", "now", "today", "indeed", "bitte", "agora", "請", "はい"]


def _units(text: str) -> tuple[list[str], str]:
    return (text.split(), " ") if " " in text else (list(text), "")


def _edit(ref: str, rnd: random.Random) -> str:
    roll = rnd.random()
    if roll < 0.25:
        return ref  # the exact answer
    units, sep = _units(ref)
    if roll < 0.5 and len(units) > 1:
        units.pop(rnd.randrange(len(units)))
    elif roll < 0.75 and len(units) > 2:
        i = rnd.randrange(len(units) - 1)
        units[i], units[i + 1] = units[i + 1], units[i]
    else:
        units.insert(rnd.randrange(len(units) + 1), rnd.choice(EXTRA))
    if rnd.random() < 0.3:
        units.insert(rnd.randrange(len(units) + 1), str(rnd.randrange(100)))
    return sep.join(units)


def rows(n: int) -> list[dict]:
    """n rows, 12 per case (4 agents x 3 trials), the case's reference repeated on each."""
    rnd = random.Random(0)
    out: list[dict] = []
    case = 0
    while len(out) < n:
        base = rnd.choice(SENTENCES)
        reference = f"{base} ({case})" if " " in base else f"{base}（{case}）"
        for agent in range(AGENTS):
            for trial in range(TRIALS):
                if len(out) < n:
                    out.append({"case_id": f"c{case}-a{agent}-t{trial}", "prompt": f"question {case}",
                                "reference": reference, "response": _edit(reference, rnd)})
        case += 1
    return out


def interleaved(fns: dict, repeats: int) -> dict[str, float]:
    """Each function's median seconds over ``repeats`` rounds, every round running each once (a load
    change on the shared machine then hits them all alike)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,20000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import sacrebleu
    from rouge_score.rouge_scorer import RougeScorer

    import levelfield as lf

    try:
        from google.adk.evaluation.eval_case import Invocation
        from google.adk.evaluation.eval_metrics import EvalMetric
        from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
        from google.genai import types
    except ImportError:
        RougeEvaluator = None  # noqa: N806
        print("google-adk not installed: ADK's response_match_score not timed")

    def ours(data: list[dict], metrics: list[str]) -> None:
        result = lf.evaluate(data, metrics=metrics, progress=False)
        result.summary_metrics  # noqa: B018  (read, as a user does)
        assert len(result.metrics_table) == len(data)

    try:  # the same Unicode-aware rule as levelfield's and ADK's, so that CJK text has tokens
        from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer

        tokenizer, tokenizer_name = _UnicodeAwareTokenizer(), "ADK's Unicode tokenizer"
    except ImportError:
        tokenizer, tokenizer_name = None, "default tokenizer (ASCII only)"
    rouge1 = RougeScorer(["rouge1"], tokenizer=tokenizer)
    rouge_l = RougeScorer(["rougeL"], tokenizer=tokenizer)

    def rs_rouge1(data: list[dict]) -> None:
        for r in data:
            rouge1.score(r["reference"], r["response"])

    def rs_three(data: list[dict]) -> None:
        for r in data:
            rouge_l.score(r["reference"], r["response"])
            sacrebleu.sentence_bleu(r["response"], [r["reference"]])
            r["response"].strip() == r["reference"].strip()  # noqa: B015

    warm = rows(60)  # first-use costs (imports, sacrebleu's tokenizers) out of the first timed round
    for metrics in (["rouge_1"], ["rouge_l", "bleu", "exact_match"], ["response_match_score"]):
        ours(warm, metrics)
    rs_rouge1(warm)
    rs_three(warm)

    for n in (int(s) for s in args.sizes.split(",")):
        data = rows(n)
        print(f"\n{n:,} rows ({n // (AGENTS * TRIALS):,} cases x {AGENTS} agents x {TRIALS} trials; "
              f"{len({r['reference'] for r in data}):,} distinct references, "
              f"{len({r['response'] for r in data}):,} distinct responses)")
        timed = {
            "lf_rouge1": lambda data=data: ours(data, ["rouge_1"]),
            "lf_three": lambda data=data: ours(data, ["rouge_l", "bleu", "exact_match"]),
            "lf_rms": lambda data=data: ours(data, ["response_match_score"]),
            "rs_rouge1": lambda data=data: rs_rouge1(data),
            "rs_three": lambda data=data: rs_three(data),
        }
        if RougeEvaluator is not None:
            evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5))

            def inv(text: str) -> Invocation:
                return Invocation(user_content=types.Content(parts=[types.Part(text="q")], role="user"),
                                  final_response=types.Content(parts=[types.Part(text=text)], role="model"))

            pairs = [(inv(r["response"]), inv(r["reference"])) for r in data]

            def adk(pairs=pairs, evaluator=evaluator) -> None:
                for actual, expected in pairs:
                    evaluator.evaluate_invocations([actual], [expected])

            timed["adk"] = adk
        t = interleaved(timed, args.repeats)

        def line(label: str, key: str, n: int = n, t: dict = t) -> None:
            print(f"  {label:<58} {n / t[key]:>10,.0f} cases/s  ({t[key]:.3f} s)")

        line("levelfield rouge_1 (lf.evaluate)", "lf_rouge1")
        line("levelfield response_match_score (lf.evaluate)", "lf_rms")
        line("levelfield rouge_l + bleu + exact_match (lf.evaluate)", "lf_three")
        print(f"  rouge-score below: row by row, {tokenizer_name}")
        line("rouge-score rouge1", "rs_rouge1")
        line("rouge-score rougeL + sacrebleu sentence_bleu + ==", "rs_three")
        if "adk" in t:
            line("google-adk response_match_score (RougeEvaluator)", "adk")
            print(f"  ratio levelfield rouge_1 / ADK:                  {t['adk'] / t['lf_rouge1']:.1f}x")
            print(f"  ratio levelfield response_match_score / ADK:     {t['adk'] / t['lf_rms']:.1f}x")
        print(f"  ratio levelfield rouge_1 / rouge-score:          {t['rs_rouge1'] / t['lf_rouge1']:.1f}x")
        print(f"  ratio levelfield L+BLEU+EM / rouge-score+sacrebleu: {t['rs_three'] / t['lf_three']:.1f}x")


if __name__ == "__main__":
    main()
