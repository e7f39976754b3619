"""Judge-corrected rates: Rogan–Gladen with judge uncertainty in simulation, kappa, labels, and a scripted judge."""

import math
import re

import numpy as np
import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError, DatasetError, MetricError
from levelfield._core.stats.judge_correction import cohen_kappa, correct_rate, read_human_labels
from levelfield.testing import ScriptedChatModel, last_human_text


def simulate(rng, *, rate=0.4, rows=4000, labels=600, sensitivity=0.9, specificity=0.8):
    truth = rng.random(rows) < rate
    judged = np.where(truth, rng.random(rows) < sensitivity, rng.random(rows) > specificity).astype(float)
    human = np.full(rows, np.nan)
    labelled = rng.choice(rows, labels, replace=False)
    human[labelled] = truth[labelled]
    return correct_rate(judged, human)


def test_corrected_interval_covers_the_true_rate_where_the_judged_one_does_not():
    rng = np.random.default_rng(2024)
    runs = [simulate(rng) for _ in range(300)]
    corrected = np.mean([c.low <= 0.4 <= c.high for c in runs])
    judged = np.mean([c.judged_low <= 0.4 <= c.judged_high for c in runs])
    assert corrected >= 0.93 and judged < 0.5


def test_estimated_judge_errors_are_close_to_the_true_ones():
    c = simulate(np.random.default_rng(5))
    assert c.sensitivity == pytest.approx(0.9, abs=0.05) and c.specificity == pytest.approx(0.8, abs=0.05)


def test_a_perfect_judge_needs_no_correction():
    judged = np.array([1, 0, 1, 1, 0, 1, 0, 0], dtype=float)
    c = correct_rate(judged, judged)
    assert c.corrected == c.judged_rate == 0.5 and c.kappa == 1.0


def test_rogan_gladen_by_hand():
    # Labelled: 10 human passes (judge passes 9), 10 human fails (judge passes 2); all 40 rows: 22 judged passes.
    human = np.array([1] * 10 + [0] * 10 + [np.nan] * 20)
    judged = np.array([1] * 9 + [0] + [1] * 2 + [0] * 8 + [1] * 11 + [0] * 9, dtype=float)
    c = correct_rate(judged, human)
    assert (c.sensitivity, c.specificity, c.judged_rate) == pytest.approx((0.9, 0.8, 22 / 40))
    assert c.corrected == pytest.approx((0.55 + 0.8 - 1) / (0.9 + 0.8 - 1))


def test_a_judge_no_better_than_chance_gives_no_corrected_rate():
    human = np.array([1, 1, 0, 0], dtype=float)
    c = correct_rate(np.array([1, 0, 1, 0], dtype=float), human)
    assert math.isnan(c.corrected) and "no better than chance" in c.describe()


def test_cohens_kappa_of_a_textbook_table():
    # 2×2 table [[20, 5], [10, 15]]: observed agreement 0.7, chance agreement 0.5 -> kappa 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_labels_with_only_passes_cannot_measure_the_judge():
    with pytest.raises(ConfigError, match="both passes and fails"):
        correct_rate([1.0, 0.0, 1.0], [1.0, 1.0, np.nan])


def test_a_bad_label_names_the_file_and_row(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("case_id,human_label\nq1,pass\nq2,maybe\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"labels.csv row 3: human_label 'maybe' is not a pass/fail label"):
        read_human_labels(path)


def test_a_labels_file_without_the_label_column_says_which_columns_it_needs(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"case_id": "q1", "label": 1}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="needs columns case_id and human_label; missing human_label"):
        read_human_labels(path)


# -- a scripted judge of known error rates, through evaluate ---------------------------------------------

# 100 questions in four languages; the agent is right on the first 60. The judge misses 10% of
# the right answers (cases 0-5) and passes 20% of the wrong ones (cases 60-67).
ANSWERS = ["東京です", "北京是首都", "Die Antwort ist Berlin", "A resposta é Lisboa"]
CASES = [{"case_id": f"q{i}", "prompt": f"Frage {i}: 首都は？"} for i in range(100)]
JUDGE_MISSES = set(range(0, 6)) | set(range(60, 68))
TEMPLATE = lf.metrics.PointwiseMetricPromptTemplate(
    criteria={"Correct": "Is the answer correct?"},
    rating_rubric={"1": "correct", "0": "wrong"},
    input_variables=["prompt"],
)


def agent(prompt: str) -> str:
    i = int(re.search(r"Frage (\d+)", prompt).group(1))
    answer = ANSWERS[i % 4] if i < 60 else "わかりません"
    return f"{answer} (#{i})"


def scripted_judge(messages) -> str:
    text = last_human_text(messages)
    i = int(re.search(r"\(#(\d+)\)", text).group(1))
    right = i < 60
    return f"score: {int(right != (i in JUDGE_MISSES))}"


def judged_metric():
    return lf.metrics.PointwiseMetric("correct", TEMPLATE, ScriptedChatModel(scripted_judge), judge_config=lf.JudgeConfig(cache=False, structured_output=False, backoff=0.0))


# Labels on half the cases: 30 right answers (judge misses 3) and 20 wrong ones (judge passes 4).
LABELLED = list(range(3, 33)) + list(range(64, 84))


def test_evaluate_with_a_labels_file_corrects_the_judged_rate_to_the_true_one(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("case_id,human_label\n" + "".join(f"q{i},{'pass' if i < 60 else 'fail'}\n" for i in LABELLED),
                    encoding="utf-8")
    result = lf.evaluate(CASES, agent, [judged_metric()], human_labels=path, progress=False)
    c = result.judge_corrections["correct"]
    assert (c.labeled, c.sensitivity, c.specificity) == (50, pytest.approx(0.9), pytest.approx(0.8))
    # Judged 62% (54 right answers passed + 8 wrong ones); (0.62 + 0.8 − 1) / 0.7 = 0.6, the true rate.
    assert c.judged_rate == pytest.approx(0.62) and c.corrected == pytest.approx(0.6)
    assert c.low < 0.6 < c.high
    assert result.summary_metrics["correct/corrected_mean"] == pytest.approx(0.6)
    assert result.summary_metrics["correct/judge_kappa"] == pytest.approx(c.kappa)


def test_a_human_label_column_in_the_dataset_corrects_without_being_asked():
    rows = [dict(case, human_label=int(i < 60)) if i in LABELLED else case for i, case in enumerate(CASES)]
    result = lf.evaluate(rows, agent, [judged_metric()], progress=False)
    assert result.judge_corrections["correct"].corrected == pytest.approx(0.6)


def test_the_correction_in_words_gives_both_rates_and_the_judge_agreement():
    rows = [dict(case, human_label=int(i < 60)) if i in LABELLED else case for i, case in enumerate(CASES)]
    words = lf.evaluate(rows, agent, [judged_metric()], progress=False).judge_corrections["correct"].describe()
    assert words.startswith("correct: judged 62.0%, corrected 60.0% [")
    assert "using 50 human labels; judge sensitivity 0.90, specificity 0.80, kappa" in words


def test_labels_without_a_judged_metric_are_refused():
    with pytest.raises(MetricError, match="no judged 0/1 metric"):
        lf.evaluate(CASES[:4], agent, ["exact_match"], human_labels={"q0": 1, "q1": 0}, progress=False)


def test_labels_for_unknown_cases_are_refused():
    with pytest.raises(DatasetError, match="not in the dataset: q999"):
        lf.evaluate(CASES[:4], agent, [judged_metric()], human_labels={"q0": 1, "q999": 0}, progress=False)
