"""Certifying a judge before it gates: lf.certify_judge, the gate's require_certified_judge, lf.rows_to_label.

The judged results are real: lf.evaluate / lf.compare score rows with final_response_match_v2 and a scripted
function judge whose verdicts (and errors) are fixed per case; the human labels say what the truth is.
The lower bounds are checked against scipy's beta quantiles (the Clopper–Pearson formula), not the code's call.
"""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

import levelfield as lf
from levelfield._core.errors import ConfigError, DatasetError, MetricError
from levelfield._core.score.metrics.base import Metric, Score
from levelfield._core.stats.certify import (
    JudgeCertification,
    UncertifiedJudgeError,
    certify_rates,
    labels_needed,
    lower_bound,
)

METRIC = "final_response_match_v2"


def cp_low(x: float, n: float, confidence: float = 0.95) -> float:
    """The Clopper–Pearson one-sided lower bound, from the beta quantile directly."""
    return float(beta.ppf(1 - confidence, x, n - x + 1))


def truth_and_judge(passes: int, fails: int, missed_passes: int = 0, missed_fails: int = 0):
    """Humans pass the first ``passes`` cases and fail the next ``fails``; the judge gets ``missed_passes`` of
    the passes and ``missed_fails`` of the fails wrong."""
    truth, says = {}, {}
    for i in range(passes + fails):
        case = f"c{i}"
        human = i < passes
        wrong = i < missed_passes if human else i - passes < missed_fails
        truth[case], says[case] = human, human != wrong
    return truth, says


def rows_of(cases) -> list[dict]:
    return [{"case_id": c, "prompt": f"Question {c}?", "response": f"answer {c}", "reference": "the reference"}
            for c in cases]


def scripted_metric(says: dict[str, bool], samples: int = 1):
    def decide(question):
        return says[re.search(r"answer (c\d+)", question.prompt).group(1)]

    return lf.metrics.adk.final_response_match_v2(judge=lf.testing.ScriptedJudge(decide), judge_config=lf.JudgeConfig(samples=samples))


def judged(says: dict[str, bool], samples: int = 1, **options):
    return lf.evaluate(rows_of(says), metrics=[scripted_metric(says, samples)], progress=False, **options)


def labels(truth: dict[str, bool], cases=None) -> dict[str, str]:
    return {c: "pass" if truth[c] else "fail" for c in (cases or truth)}


# -- certify_judge on real results -------------------------------------------------------------


def test_a_good_judge_is_certified():
    truth, says = truth_and_judge(60, 60, missed_passes=1, missed_fails=1)
    found = lf.certify_judge(judged(says), labels(truth))
    m = found[METRIC]
    assert found.certified and m.certified
    assert (m.positives, m.negatives, m.true_positives, m.true_negatives, m.labeled, m.judged) == (60, 60, 59, 59, 120, 120)
    assert m.sensitivity == pytest.approx(59 / 60) and m.specificity == pytest.approx(59 / 60)
    assert m.sensitivity_low == pytest.approx(cp_low(59, 60), abs=1e-9) and m.sensitivity_low >= 0.8
    assert m.more_positives == m.more_negatives == m.more_rows == 0
    assert "sensitivity lower bound 0.92 >= 0.80 on 60 positives" in m.reason
    text = str(found)
    assert METRIC in text and "certified" in text and "NOT certified" not in text


def test_a_poor_judge_fails_with_the_reason():
    truth, says = truth_and_judge(40, 40, missed_fails=8)   # specificity 32/40 = 0.80, not above the minimum
    found = lf.certify_judge(judged(says), labels(truth))
    m = found[METRIC]
    assert not found.certified and found.failures == [m]
    assert m.specificity_low == pytest.approx(cp_low(32, 40), abs=1e-9)   # 0.668
    assert m.reason == ("specificity lower bound 0.66 < 0.80 on 40 negatives, and the observed specificity 0.80 is "
                        "not above 0.80: more labels cannot certify this judge")
    assert m.more_negatives is None and m.more_rows is None
    assert m.met == ("sensitivity lower bound 0.92 >= 0.80 on 40 positives",)
    assert "NOT certified" in str(found) and "cannot certify" in str(found)


def test_a_judge_good_enough_on_too_few_labels_says_how_many_more():
    truth, says = truth_and_judge(40, 40, missed_fails=4)   # specificity 36/40 = 0.90, bound 0.786
    m = lf.certify_judge(judged(says), labels(truth))[METRIC]
    assert not m.certified and m.specificity_low == pytest.approx(cp_low(36, 40), abs=1e-9)
    more = m.more_negatives
    # At the observed 0.90, 40 + more fails reach the bound and one fewer does not (scipy's beta, directly).
    assert cp_low(0.9 * (40 + more), 40 + more) >= 0.8 > cp_low(0.9 * (39 + more), 39 + more)
    assert m.reason == f"specificity lower bound 0.78 < 0.80 on 40 negatives; about {more} more negatives at the observed 0.90 would certify it"
    assert m.more_rows == 2 * more   # half the labelled rows are fails
    assert f"~{2 * more} rows" in str(lf.certify_judge(judged(says), labels(truth)))


def test_stricter_minimums_and_confidence_change_the_verdict():
    truth, says = truth_and_judge(60, 60, missed_passes=1, missed_fails=1)
    result = judged(says)
    strict = lf.certify_judge(result, labels(truth), min_tpr=0.95, min_tnr=0.8)
    assert not strict.certified and strict[METRIC].reason.startswith("sensitivity lower bound 0.92 < 0.95 on 60 positives")
    loose = lf.certify_judge(result, labels(truth), confidence=0.8)
    assert loose[METRIC].sensitivity_low == pytest.approx(cp_low(59, 60, 0.8), abs=1e-9)


def test_a_saved_and_reloaded_result_is_certified_the_same(tmp_path):
    truth, says = truth_and_judge(30, 30, missed_passes=2, missed_fails=3)
    result = judged(says)
    result.save(tmp_path / "run")
    loaded = lf.EvalResult.load(tmp_path / "run")
    assert lf.certify_judge(loaded, labels(truth)).to_dict() == lf.certify_judge(result, labels(truth)).to_dict()


def test_labels_by_trial_and_for_one_metric(tmp_path):
    truth, says = truth_and_judge(20, 20, missed_fails=2)
    result = lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], trials=2, progress=False)
    path = tmp_path / "labels.jsonl"
    rows = [{"case_id": c, "trial": 0, "metric": METRIC, "human_label": v} for c, v in truth.items()]
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    m = lf.certify_judge(result, path)[METRIC]
    assert m.labeled == 40 and m.judged == 80   # the second trial is not labelled
    found = lf.certify_judge(result, labels(truth))   # a label without a trial: every trial of the case
    assert found[METRIC].labeled == 80 and "trials" in str(found)


def test_the_labels_needed_projection_matches_scipys_bound():
    for rate, have in ((0.9, 40), (0.95, 20), (0.85, 100)):
        more = labels_needed(rate, have, 0.8)
        n = have + more
        assert cp_low(rate * n, n) >= 0.8 > cp_low(rate * (n - 1), n - 1)
    # A judge right on every one of n rows has the bound 0.05 ** (1 / n): 0.8 needs n >= log(0.05) / log(0.8) = 13.4.
    assert labels_needed(1.0, 0, 0.8) == 14
    assert labels_needed(0.8, 1000, 0.8) is None and labels_needed(0.7, 10, 0.8) is None
    assert labels_needed(1.0, 40, 0.8) == 0


def test_exact_lower_bounds_are_scipys():
    from scipy.stats import binomtest

    for x, n in ((0, 10), (7, 10), (10, 10), (59, 60), (1, 1)):
        assert lower_bound(x, n) == pytest.approx(0.0 if x == 0 else cp_low(x, n), abs=1e-9)
        # The one-sided 95 % bound is the two-sided 90 % interval's lower end.
        assert lower_bound(x, n) == pytest.approx(binomtest(x, n).proportion_ci(0.90, method="exact").low, abs=1e-9)
        one_sided = binomtest(x, n, alternative="greater").proportion_ci(0.95, method="exact").low
        assert lower_bound(x, n) == pytest.approx(one_sided, abs=1e-9)
    assert math.isnan(lower_bound(0, 0))


def test_kappa_of_a_hand_table_and_sklearns():
    # 2x2 table [[20, 5], [10, 15]]: observed agreement 0.7, chance agreement 0.5 -> kappa 0.4.
    judge = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    human = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    m = certify_rates(judge, human, metric="m")
    assert m.kappa == pytest.approx(0.4)
    assert (m.true_positives, m.positives, m.true_negatives, m.negatives) == (20, 30, 15, 20)
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    assert certify_rates(a, b).kappa == pytest.approx(sklearn.cohen_kappa_score(b, a))


def test_the_table_prints_true_lower_bounds():
    # A bound of 0.7996 is shown as 0.79 (rounded down), never as 0.80 next to "< 0.80".
    m = certify_rates([1.0] * 40 + [0.0] * 40, [1.0] * 40 + [0.0] * 40, min_tpr=0.5, min_tnr=0.5)
    shown = re.findall(r"sensitivity lower bound (\d\.\d\d)", m.describe())[0]
    assert float(shown) <= m.sensitivity_low < float(shown) + 0.01


# -- bad inputs --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    truth, says = truth_and_judge(6, 6, missed_fails=1)
    return truth, judged(says)


def test_a_labels_file_without_case_id_or_label_column(tmp_path, small):
    truth, result = small
    path = tmp_path / "labels.csv"
    path.write_text("case,human_label\nc0,pass\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"labels.csv: needs columns case_id and human_label; missing case_id"):
        lf.certify_judge(result, path)
    path.write_text("case_id,label\nc0,pass\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="missing human_label"):
        lf.certify_judge(result, path)


def test_a_label_that_is_not_pass_or_fail_names_the_row(tmp_path, small):
    _, result = small
    path = tmp_path / "labels.csv"
    path.write_text("case_id,human_label\nc0,pass\nc1,good\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"labels.csv row 3: human_label 'good' is not a pass/fail label"):
        lf.certify_judge(result, path)


def test_labels_naming_unknown_cases(small):
    _, result = small
    with pytest.raises(DatasetError, match=r"human labels name 1 case\(s\) not in the dataset: c99"):
        lf.certify_judge(result, {"c0": 1, "c99": 0})


def test_no_judged_metric_in_the_result():
    result = lf.evaluate(rows_of(["c0", "c1"]), metrics=["rouge_l_sum"], progress=False)
    with pytest.raises(MetricError, match="no judged 0/1 metric in this result.*rouge_l_sum"):
        lf.certify_judge(result, {"c0": 1, "c1": 0})
    with pytest.raises(MetricError, match="'rouge_l_sum' is not scored by a judge"):
        lf.certify_judge(result, {"c0": 1}, metrics=["rouge_l_sum"])


def test_a_judged_metric_with_ratings_is_not_certifiable():
    rating = lf.metrics.judged.final_response_quality(judge=lf.testing.ScriptedJudge(rating="4"), judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(rows_of(["c0", "c1"]), metrics=[rating], progress=False)
    with pytest.raises(MetricError, match="judged, not 0/1: final_response_quality"):
        lf.certify_judge(result, {"c0": 1, "c1": 0})


@pytest.mark.parametrize("option", [{"min_tpr": 0}, {"min_tpr": 1}, {"min_tnr": 1.5}, {"min_tnr": -0.1},
                                    {"confidence": 0.4}, {"confidence": 1.0}])
def test_minimums_and_confidence_outside_their_range(small, option):
    truth, result = small
    name = next(iter(option))
    with pytest.raises(ConfigError, match=rf"{name}={option[name]!r}: give"):
        lf.certify_judge(result, labels(truth), **option)


def test_only_passes_labelled_say_specificity_cannot_be_estimated(small):
    truth, result = small
    m = lf.certify_judge(result, {c: "pass" for c in truth if truth[c]})[METRIC]
    assert not m.certified and math.isnan(m.specificity) and m.negatives == 0
    assert ("specificity cannot be estimated: humans failed none of the 6 labelled rows (only passes were "
            "labelled); label rows humans failed (even a judge right on every one needs 14 of them to show "
            "specificity >= 0.80)") in m.reason


def test_no_labels_at_all(small):
    _, result = small
    with pytest.raises(ConfigError, match="no human labels"):
        lf.certify_judge(result)


def test_labels_name_the_agent_whose_answers_they_judge():
    truth, says = truth_and_judge(6, 6, missed_fails=1)
    result = lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], name="mine", progress=False)
    with pytest.raises(ConfigError, match=r"the human labels are for agent\(s\) other, not 'mine'"):
        lf.certify_judge(result, [{"case_id": "c0", "agent": "other", "human_label": 1}])
    mixed = [{"case_id": c, "agent": "mine", "human_label": v} for c, v in truth.items()]
    mixed += [{"case_id": c, "agent": "other", "human_label": not v} for c, v in truth.items()]
    m = lf.certify_judge(result, pd.DataFrame(mixed))[METRIC]
    assert m.labeled == 12 and (m.true_positives, m.true_negatives) == (6, 5)


def test_judge_correction_reads_labels_as_certification_does():
    """One reader of human labels (certification, judge correction, panels): an evaluation's judge correction keeps only
    the rows of the agent evaluated, as certification does (another agent's labels judge other answers)."""
    truth, says = truth_and_judge(6, 6, missed_fails=1)
    mixed = [{"case_id": c, "agent": "mine", "human_label": v} for c, v in truth.items()]
    mixed += [{"case_id": c, "agent": "other", "human_label": not v} for c, v in truth.items()]
    result = lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], name="mine", progress=False,
                         human_labels=pd.DataFrame(mixed))
    correction = result.judge_corrections[METRIC]
    assert correction.labeled == 12
    assert (correction.sensitivity, correction.specificity) == (1.0, 5 / 6)  # the judge missed one fail of six
    assert correction.human_rate == 0.5
    with pytest.raises(ConfigError, match=r"the human labels are for agent\(s\) other, not 'mine'"):
        lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], name="mine", progress=False,
                    human_labels=[{"case_id": "c0", "agent": "other", "human_label": 1}])


# -- the gate ----------------------------------------------------------------------------------


def agent(prompt: str) -> str:
    return "answer " + re.search(r"c\d+", prompt).group(0)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """A saved run to gate against, and the judge's verdicts and the humans' labels of its cases."""
    truth, says = truth_and_judge(20, 20, missed_fails=8)   # specificity 12/20: not certifiable
    folder = tmp_path_factory.mktemp("gate") / "main"
    lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], out=folder, name="main", progress=False)
    return folder, truth, says


def test_the_gate_refuses_an_uncertified_judge(baseline):
    folder, truth, says = baseline
    with pytest.raises(UncertifiedJudgeError) as caught:
        lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], baseline=folder,
                   fail_if_worse=METRIC, require_certified_judge=True, human_labels=labels(truth), progress=False)
    text = str(caught.value)
    assert text.startswith(f"fail_if_worse {METRIC} (new): the judge is not certified, so the gate does not decide on it")
    assert "specificity lower bound 0.39 < 0.80 on 20 negatives" in text
    assert cp_low(12, 20) == pytest.approx(0.3936, abs=1e-4)


def test_the_gate_refuses_without_labels(baseline):
    folder, _, says = baseline
    with pytest.raises(UncertifiedJudgeError, match=f"fail_if_worse {METRIC} \\(new\\): a certified judge is required "
                                                    "\\(require_certified_judge\\) but no human labels were given"):
        lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], baseline=folder,
                   fail_if_worse=METRIC, require_certified_judge=True, progress=False)


def test_the_gate_decides_on_a_certified_judge(tmp_path):
    truth, says = truth_and_judge(30, 30, missed_passes=1)
    folder = tmp_path / "main"
    lf.evaluate(rows_of(says), agent, metrics=[scripted_metric(says)], out=folder, name="main", progress=False)
    cmp = lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], baseline=folder,
                     fail_if_worse=METRIC, require_certified_judge=True, human_labels=labels(truth), progress=False)
    assert cmp.summary.loc["new", f"{METRIC}/mean"] == pytest.approx(29 / 60)


def test_the_gate_takes_a_certification_made_before(baseline):
    folder, truth, says = baseline
    cmp = lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], baseline=folder, progress=False)
    poor = lf.certify_judge(cmp, labels(truth), agent="new")
    assert isinstance(poor, JudgeCertification) and not poor.certified
    with pytest.raises(UncertifiedJudgeError, match="specificity lower bound 0.39 < 0.80"):
        lf.gate.check_regressions(cmp, METRIC, require_certified_judge=poor)
    lenient = lf.certify_judge(cmp, labels(truth), agent="new", min_tnr=0.3)
    assert lenient.certified
    assert not lf.gate.check_regressions(cmp, METRIC, require_certified_judge=lenient).failed
    assert not lf.gate.check_regressions(cmp, METRIC).failed   # without the requirement it gates as before


def test_a_gate_on_a_metric_no_judge_scored_needs_no_certificate_but_requiring_one_there_is_refused(baseline):
    folder, truth, says = baseline
    rows = [dict(r, reference=r["response"]) for r in rows_of(says)]
    cmp = lf.compare(rows, {"new": agent}, metrics=["rouge_l_sum", scripted_metric(says)], progress=False)
    joined = lf.compare(rows, {"new2": agent}, metrics=["rouge_l_sum", scripted_metric(says)], progress=False,
                        baseline={"old": cmp.results["new"]})
    # rouge_l_sum passes through; the judged metric gated beside it is refused.
    with pytest.raises(UncertifiedJudgeError, match=f"fail_if_worse {METRIC} \\(new2\\)"):
        lf.gate.check_regressions(joined, ["rouge_l_sum", METRIC], require_certified_judge=True,
                                  human_labels=labels(truth))
    with pytest.raises(ConfigError, match="fail_if_worse rouge_l_sum: require_certified_judge certifies the judge of a "
                                          "judged metric, and no gated metric is scored by a judge"):
        lf.gate.check_regressions(joined, "rouge_l_sum", require_certified_judge=True, human_labels=labels(truth))


def test_require_certified_judge_options_that_cannot_apply(baseline):
    folder, truth, says = baseline
    with pytest.raises(ConfigError, match="require_certified_judge=True certifies the judge of a gated metric: give "
                                          "fail_if_worse"):
        lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], require_certified_judge=True,
                   human_labels=labels(truth), progress=False)
    with pytest.raises(ConfigError, match=r"compare\(human_labels=...\) is read by require_certified_judge=True"):
        lf.compare(rows_of(says), {"new": agent}, metrics=[scripted_metric(says)], human_labels=labels(truth),
                   progress=False)


def test_a_bad_labels_file_fails_before_any_agent_runs(baseline, tmp_path):
    folder, truth, says = baseline
    path = tmp_path / "labels.csv"
    path.write_text("case_id,human_label\nc0,maybe\n", encoding="utf-8")
    calls = []

    def counted(prompt):
        calls.append(prompt)
        return agent(prompt)

    with pytest.raises(DatasetError, match="row 2: human_label 'maybe'"):
        lf.compare(rows_of(says), {"new": counted}, metrics=[scripted_metric(says)], baseline=folder,
                   fail_if_worse=METRIC, require_certified_judge=True, human_labels=path, progress=False)
    assert calls == []


# -- rows to label next ------------------------------------------------------------------------


def test_rows_to_label_picks_the_rows_whose_samples_disagree():
    truth, says = truth_and_judge(10, 10)
    disputed = {"c3": 3, "c12": 4, "c15": 5}   # how many of 5 samples say yes
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def decide(question):
        case = re.search(r"answer (c\d+)", question.prompt).group(1)
        if case not in disputed:
            return says[case]
        with lock:
            counts[case] = counts.get(case, 0) + 1
            return counts[case] <= disputed[case]

    metric = lf.metrics.adk.final_response_match_v2(judge=lf.testing.ScriptedJudge(decide), judge_config=lf.JudgeConfig(samples=5))
    result = lf.evaluate(rows_of(says), metrics=[metric], progress=False)
    picks = lf.rows_to_label(result, budget=4, human_labels={"c0": "pass"})
    assert len(picks) == 4
    assert list(picks["case_id"][:2]) == ["c3", "c12"]        # 3 of 5 agree before 4 of 5
    assert picks["reason"][0] == f"{METRIC}: the judge's samples disagree (the majority verdict had 60% of them)"
    assert picks["doubt"][0] == pytest.approx(0.8) and picks["doubt"][1] == pytest.approx(0.4)
    assert picks["reason"][3] == (f"{METRIC}: the judge's samples agree (the majority verdict had 100% of them); "
                                  "picked at random among the rows the judge is sure of")
    assert "c0" not in set(picks["case_id"])                   # labelled already
    assert set(picks.columns) >= {"case_id", "trial", "metric", "verdict", "reason", "prompt", "response", "human_label"}


class ProbabilityJudged(Metric):
    """A judged pass/fail metric that keeps the judge's probability as ``<metric>/p`` (as a probability judge does)."""

    requires = ("response",)

    def __init__(self, probabilities: dict[str, float]) -> None:
        self.name = "prob_judged"
        self.probabilities = probabilities
        self.judge = lambda prompt: "yes"   # what makes it a judged metric

    def score(self, ctx):
        p = self.probabilities[ctx.case_id]
        return Score(float(p >= 0.5), extra={"p": p, "judge_calls": 1})


def test_rows_to_label_picks_probabilities_nearest_one_half():
    probabilities = {f"c{i}": p for i, p in enumerate([0.99, 0.51, 0.2, 0.45, 0.9, 0.6, 0.02, 0.7])}
    result = lf.evaluate(rows_of(probabilities), metrics=[ProbabilityJudged(probabilities)], progress=False)
    picks = lf.rows_to_label(result, 3)
    assert list(picks["case_id"]) == ["c1", "c3", "c5"]
    assert picks["reason"][0] == "prob_judged: the judge's probability 0.51 is 0.01 from 0.5"
    assert list(picks["p"]) == [0.51, 0.45, 0.6]


def test_rows_to_label_without_any_doubt_recorded_draws_at_random_and_fills_a_labels_sheet(tmp_path):
    truth, says = truth_and_judge(15, 15, missed_fails=2)
    result = judged(says)
    first = lf.rows_to_label(result, 10, labels(truth, ["c0", "c1"]), seed=1)
    again = lf.rows_to_label(result, 10, labels(truth, ["c0", "c1"]), seed=1)
    assert list(first["case_id"]) == list(again["case_id"]) and len(first) == 10
    assert not {"c0", "c1"} & set(first["case_id"])
    assert all(r.endswith("picked at random") for r in first["reason"])
    assert list(lf.rows_to_label(result, 10, seed=2)["case_id"]) != list(first["case_id"])
    # The sheet, filled in, is a labels file certify_judge reads.
    first["human_label"] = ["pass" if truth[c] else "fail" for c in first["case_id"]]
    sheet = tmp_path / "to_label.csv"
    first.to_csv(sheet, index=False)
    m = lf.certify_judge(result, sheet)[METRIC]
    assert m.labeled == 10
    assert m.positives == sum(truth[c] for c in first["case_id"])
    everything = lf.rows_to_label(result, 100)
    assert len(everything) == 30


def test_rows_to_label_bad_budget(small):
    _, result = small
    for budget in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="budget=.*give the number of rows humans can label"):
            lf.rows_to_label(result, budget)


def test_in_simulation_a_judge_below_the_minimum_is_certified_at_most_5_percent_of_the_time():
    # Specificity truly 0.80 (at the minimum, the hardest case), 60 labelled fails and 60 passes a perfect judge gets right.
    rng = np.random.default_rng(44)
    certified = 0
    runs = 600
    for _ in range(runs):
        human = np.array([1.0] * 60 + [0.0] * 60)
        judge = human.copy()
        judge[60:] = (rng.random(60) > 0.8).astype(float)       # passes a human fail 20 % of the time
        certified += certify_rates(judge, human).certified
    assert certified / runs <= 0.05


def test_in_simulation_the_lower_bound_is_below_the_true_rate_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    lows = [lower_bound(int(rng.binomial(40, 0.9)), 40) for _ in range(2000)]
    assert np.mean(np.array(lows) <= 0.9) >= 0.95
