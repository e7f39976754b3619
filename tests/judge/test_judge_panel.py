"""Panels of judges: several judges on one judged metric, each judge's votes kept per row, and what the panel is worth.

The figures of ``lf.panel_report`` are checked on simulated panels whose error correlation is known
(a latent shared-error model), and end to end through ``lf.evaluate`` with function judges and a
real LangChain ``ChatOpenAI`` client talking to a local OpenAI stand-in.
"""

from __future__ import annotations

import json
import math
import re
import threading

import numpy as np
import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError, MetricError
from levelfield._core.stats.panel import analyse_panel, effective_votes
from provider_standins import Bill, OpenAIStandIn, Step

# -- simulated panels of known error correlation -----------------------------------------------------


def simulate(rng, rows, judges, err, rho, samples=1):
    """Votes (rows × judges × samples) and the truth of a latent shared-error panel.

    On each row a shared error S ~ Bernoulli(err) is drawn; each judge copies it with probability
    c = √ρ and otherwise errs on its own (Bernoulli(err)). Two judges' error indicators then have
    covariance c²·err·(1 − err) and correlation exactly ρ. Every sample of a judge repeats its vote
    (a judge at temperature 0): its samples' errors are perfectly correlated.
    """
    c = math.sqrt(rho)
    truth = (rng.random(rows) < 0.5).astype(float)
    shared = rng.random(rows) < err
    own = rng.random((rows, judges)) < err
    error = np.where(rng.random((rows, judges)) < c, shared[:, None], own)
    votes = np.abs(truth[:, None] - error)
    return np.repeat(votes[..., None], samples, axis=2), truth


def simulate_samples(rng, rows, judges, samples, err, rho_between, c_within):
    """A latent panel whose samples differ: a vote copies the row's shared error with probability
    c_b = √ρ_b, else its judge's own error on the row with probability c_w, else errs on its own.
    Votes of two judges then correlate ρ_b; two samples of one judge ρ_b + (1 − c_b)²·c_w²."""
    c_b = math.sqrt(rho_between)
    truth = (rng.random(rows) < 0.5).astype(float)
    shared = rng.random(rows) < err
    judge_err = rng.random((rows, judges)) < err
    own = rng.random((rows, judges, samples)) < err
    pick = rng.random((rows, judges, samples))
    pick_w = rng.random((rows, judges, samples)) < c_within
    error = np.where(pick < c_b, shared[:, None, None], np.where(pick_w, judge_err[..., None], own))
    within = rho_between + (1 - c_b) ** 2 * c_within ** 2
    return np.abs(truth[:, None, None] - error), truth, within


def names(n):
    return [f"j{i}" for i in range(n)]


@pytest.mark.parametrize("judges, rho", [(3, 0.5), (9, 0.4), (5, 0.1), (4, 0.0)])
def test_effective_votes_are_within_ten_percent_of_the_known_value(judges, rho):
    known = judges / (1 + (judges - 1) * rho)  # nine judges at ρ = 0.4 are worth 2.14 votes
    rng = np.random.default_rng(judges * 100 + int(rho * 10))
    estimates = []
    for _ in range(8):
        votes, truth = simulate(rng, 2000, judges, 0.2, rho)
        estimates.append(analyse_panel(votes, names(judges), human=truth).effective_votes)
    estimates = np.array(estimates)
    assert np.all(np.abs(estimates / known - 1) <= 0.10), (known, estimates)
    assert abs(estimates.mean() / known - 1) <= 0.03


def test_samples_repeating_a_judge_add_no_independent_votes():
    # 3 judges × 3 samples at temperature 0: 9 votes, worth what the 3 judges are.
    rng = np.random.default_rng(7)
    votes, truth = simulate(rng, 3000, 3, 0.2, 0.3, samples=3)
    report = analyse_panel(votes, names(3), human=truth, target_agreement=0.78)
    known = 3 / (1 + 2 * 0.3)
    assert report.votes == 9
    assert report.effective_votes == pytest.approx(known, rel=0.10)
    assert report.effective_judges == pytest.approx(known, rel=0.10)
    # Against humans, a judge's extra samples buy nothing: the cheapest way to 78 % asks one judge once.
    assert report.cheapest.samples == 1 and len(report.cheapest.judges) == 1
    assert report.full.samples == 3 and report.full.cost == 9.0


def test_effective_votes_of_judges_times_samples_within_ten_percent_of_the_known_value():
    rng = np.random.default_rng(23)
    for _ in range(4):
        votes, truth, within = simulate_samples(rng, 3000, 3, 3, 0.2, 0.25, 0.7)
        n, pairs = 9, 36
        mean_rho = (3 * 3 * within + 27 * 0.25) / pairs  # 9 pairs within a judge, 27 across judges
        known = n / (1 + (n - 1) * mean_rho)
        report = analyse_panel(votes, names(3), human=truth)
        assert report.effective_votes == pytest.approx(known, rel=0.10)
        assert report.effective_judges < 3


def test_a_correlated_three_judge_panel_is_worth_fewer_than_three_votes_and_a_cheaper_subset_does():
    rng = np.random.default_rng(11)
    votes, truth = simulate(rng, 600, 3, 0.1, 0.7)
    report = analyse_panel(votes, ["gpt", "claude", "gemini"], human=truth, target_agreement=0.85,
                           cost_per_vote=[3.0, 2.0, 1.0], cost_unit="usd")
    assert report.effective_votes < 2.0
    assert report.mean_vote_correlation == pytest.approx(0.7, abs=0.1)
    assert report.cheapest is not None and report.cheapest.cost < report.full.cost
    assert report.cheapest.judges == ("gemini",)  # the cheapest judge alone already agrees 85 % with the humans
    assert report.cheapest.agreement >= 0.85
    text = str(report)
    assert "effective independent votes: " in text and "of 3" in text
    assert "cheapest subset reaching 85.0% agreement with the human labels: gemini × 1 sample" in text


def test_an_independent_panel_is_worth_its_votes_and_only_the_full_panel_reaches_a_high_target():
    rng = np.random.default_rng(5)
    votes, truth = simulate(rng, 4000, 3, 0.2, 0.0)
    report = analyse_panel(votes, names(3), human=truth, target_agreement=0.88)
    assert report.effective_votes == pytest.approx(3.0, rel=0.10)
    # One judge is right 80 % of the time, three independent ones by majority 89.6 %.
    assert [s.accuracy for s in report.standings] == [pytest.approx(0.8, abs=0.02)] * 3
    assert report.full.agreement == pytest.approx(0.896, abs=0.015)
    assert report.cheapest == report.full


def test_without_labels_the_cheapest_subset_is_measured_against_the_panel_and_effective_votes_are_not_given():
    rng = np.random.default_rng(3)
    votes, _ = simulate(rng, 500, 3, 0.1, 0.7)
    report = analyse_panel(votes, names(3), target_agreement=0.9, cost_per_vote=[1, 1, 1])
    assert report.errors_against == "panel" and report.agreement_against == "panel"
    assert math.isnan(report.effective_votes)
    assert report.full.agreement == 1.0
    assert report.cheapest.votes == 1 and report.cheapest.agreement >= 0.9
    text = str(report)
    assert "no human labels: errors are disagreements with the panel's majority" in text
    assert "effective independent votes: not measured: it needs human labels" in text


def test_a_tie_counts_half_and_a_judge_without_a_vote_counts_nothing():
    nan = math.nan
    # Row 0: a says 1, b says 0 (a tie); row 1: both 1; row 2: a failed, b says 0.
    votes = np.array([[[1.0], [0.0]], [[1.0], [1.0]], [[nan], [0.0]]])
    report = analyse_panel(votes, ["a", "b"], human=np.array([1.0, 1.0, 0.0]), target_agreement=1.0)
    assert report.full.agreement == pytest.approx((0.5 + 1 + 1) / 3)
    assert report.standings[0].failed == 1 and report.standings[0].accuracy == 1.0
    assert report.standings[1].accuracy == pytest.approx(2 / 3)
    # a alone: right on rows 0 and 1, no vote on row 2 (counts 0); b alone: wrong, right, right.
    assert report.cheapest is None and report.best.agreement == pytest.approx(5 / 6)
    assert report.best.judges == ("a", "b")


def test_design_effect_formula():
    assert effective_votes(9, 0.4) == pytest.approx(9 / 4.2)
    assert effective_votes(3, 0.0) == 3.0 and effective_votes(1, math.nan) == 1.0
    assert math.isnan(effective_votes(3, -0.6))  # 1 + 2·(−0.6) < 0: no such panel


# -- judges=[...] on a judged metric, through lf.evaluate ------------------------------------------

TEMPLATE = lf.metrics.PointwiseMetricPromptTemplate(
    criteria={"Correct": "Is the answer correct?"},
    rating_rubric={"1": "correct", "0": "wrong"},
    input_variables=["prompt", "response"],
)

# Four languages; the agent answers right on the even cases.
QUESTIONS = ["Qual é a capital de Portugal?", "德国的首都是哪里？", "Was ist die Hauptstadt von Japan?", "ポルトガルの首都は？"]
RIGHT = ["Lisboa", "柏林", "Tokio", "リスボン"]
ROWS = [{"case_id": f"c{i}", "prompt": f"{QUESTIONS[i % 4]} (#{i})", "human_label": int(i % 2 == 0)} for i in range(8)]


def agent(prompt: str) -> str:
    i = int(re.search(r"\(#(\d+)\)", prompt).group(1))
    return f"{RIGHT[i % 4] if i % 2 == 0 else 'não sei / 不知道'} (#{i})"


def case_of(prompt: str) -> int:
    return int(re.search(r"\(#(\d+)\)", prompt).group(1))


def answer(score: int, why: str) -> str:
    return json.dumps({"score": str(score), "explanation": why}, ensure_ascii=False)


def truthful(prompt: str) -> str:
    i = case_of(prompt)
    return answer(int(i % 2 == 0), f"Resposta {'certa' if i % 2 == 0 else 'errada'}: {RIGHT[i % 4]}")


def lenient(prompt: str) -> str:  # passes everything: wrong on the odd cases
    return answer(1, "看起来不错")


def flaky(prompt: str) -> str:  # right, but fails on case 2 and answers nonsense on case 4
    i = case_of(prompt)
    if i == 2:
        raise RuntimeError("Zeitüberschreitung beim Richter")
    if i == 4:
        return "ich weiß nicht"
    return answer(int(i % 2 == 0), "正しい" if i % 2 == 0 else "間違い")


def test_a_panel_keeps_every_judges_votes_and_the_majority_is_the_score():
    metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[truthful, lenient, flaky], judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(ROWS, agent, [metric], progress=False)
    table = result.metrics_table
    # Odd cases: truthful and flaky say 0, lenient 1 -> 0; even cases all 1 (case 2/4: flaky gives none).
    assert list(table["korrekt/score"]) == [1, 0, 1, 0, 1, 0, 1, 0]
    s = {r.case_id: sc for r, sc in zip(result.runs, result.scores)}
    assert s["c1"]["korrekt/judge/truthful/votes"] == [0.0] and s["c1"]["korrekt/judge/lenient/votes"] == [1.0]
    assert s["c1"]["korrekt/judge/lenient/score"] == 1.0 and s["c1"]["korrekt/agreement"] == pytest.approx(2 / 3)
    # A judge that fails on a row is that judge's recorded failure; the verdict is the other two's, and says so.
    assert s["c2"]["korrekt/judge/flaky/votes"] == [None] and math.isnan(s["c2"]["korrekt/judge/flaky/score"])
    assert s["c2"]["korrekt/judge/flaky/error"] == "RuntimeError: Zeitüberschreitung beim Richter"
    assert s["c2"]["korrekt/judges_failed"] == 1 and not s["c2"].get("korrekt/failed")
    assert s["c2"]["korrekt/panel"] == "2 of 3 judges voted; flaky failed: RuntimeError: Zeitüberschreitung beim Richter"
    assert "could not be read" in s["c4"]["korrekt/judge/flaky/error"] and "ich weiß nicht" in s["c4"]["korrekt/judge/flaky/error"]
    assert s["c0"]["korrekt/judges_failed"] == 0 and s["c0"]["korrekt/panel"] == "3 of 3 judges voted"
    assert s["c0"]["korrekt/explanation"] in ("Resposta certa: Lisboa", "看起来不错", "正しい")
    assert s["c1"]["korrekt/judge/truthful/calls"] == 1 and s["c1"]["korrekt/judge_calls"] == 3


def test_a_tie_between_judges_scores_the_mean_of_the_tied_ratings():
    metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges={"wahr": truthful, "mild": lenient}, judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(ROWS[:2], agent, [metric], progress=False)
    assert list(result.metrics_table["korrekt/score"]) == [1.0, 0.5]  # case 1: 1 against 0 -> 0.5


def test_every_judge_failing_is_the_rows_judge_failure():
    def down(prompt):
        raise ConnectionRefusedError("kein Anschluss")

    def mute(prompt):
        return "……"

    metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[down, mute], judge_config=lf.JudgeConfig(cache=False, retries=0))
    with pytest.warns(UserWarning, match="judge 'panel of down, mute' gave answers no parser reads"):
        result = lf.evaluate(ROWS[:1], agent, [metric], progress=False)
    scores = result.scores[0]
    assert scores["korrekt/failed"] is True and math.isnan(scores["korrekt/score"])
    assert scores["korrekt/error"].startswith("every judge of the panel failed: down failed: ConnectionRefusedError")
    assert "mute failed: the judge's answer could not be read" in scores["korrekt/error"]
    assert scores["korrekt/judges_failed"] == 2


def test_a_panel_asks_each_judge_num_samples_times():
    calls = []
    lock = threading.Lock()

    def counted(prompt):
        with lock:
            calls.append(prompt)
        return truthful(prompt)

    metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[counted, lenient], judge_config=lf.JudgeConfig(samples=3, cache=False))
    result = lf.evaluate(ROWS[:2], agent, [metric], progress=False)
    assert len(calls) == 6
    assert result.scores[1]["korrekt/judge/counted/votes"] == [0.0, 0.0, 0.0]
    assert result.scores[1]["korrekt/judge/lenient/votes"] == [1.0, 1.0, 1.0]
    assert result.scores[1]["korrekt/sample_values"] == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]


def test_the_panel_report_of_an_evaluation_against_the_datasets_human_labels():
    metric = lf.metrics.PointwiseMetric("response_follows_trajectory", TEMPLATE, judges=[truthful, lenient, flaky],
                                        judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(ROWS, agent, [metric], progress=False)
    reports = lf.panel_report(result, target_agreement=0.9)
    report = reports["response_follows_trajectory"]
    assert report.labelled == 8 and report.errors_against == "humans"
    by = {s.name: s for s in report.standings}
    assert by["truthful"].accuracy == 1.0 and by["lenient"].accuracy == 0.5
    assert (by["flaky"].voted, by["flaky"].failed, by["flaky"].accuracy) == (6, 2, 1.0)
    # truthful and flaky never err: their error correlations are undefined, and so are the effective votes, as said.
    assert math.isnan(report.judge_correlation[0, 1]) and math.isnan(report.effective_votes)
    assert "truthful, flaky never or always erred on the labelled rows" in str(report)
    assert "effective independent votes: not measured for these 3 votes (see the note)" in str(report)
    # One function call a vote each: the truthful judge alone reaches 90 % against the humans, at a third of the cost.
    assert report.cost_unit == "calls"
    assert report.cheapest.judges == ("truthful",) and report.cheapest.cost == 1.0 and report.full.cost == 3.0
    text = str(reports)
    assert text.startswith("response_follows_trajectory: a panel of 3 judges × 1 sample, 8 rows (8 with human labels)")
    assert "flaky" in text and "cheapest subset reaching 90.0% agreement with the human labels: truthful × 1 sample" in text


def test_a_panel_with_a_real_chat_model_client_on_a_local_openai_stand_in():
    langchain_openai = pytest.importorskip("langchain_openai")

    class JudgingOpenAI(OpenAIStandIn):
        """The OpenAI stand-in answering as a judge: 1 when the answer under review holds the right word."""

        def _serve(self, handler, path, body):
            self._local = getattr(self, "_local", None) or threading.local()
            self._local.prompt = body["messages"][-1]["content"]
            super()._serve(handler, path, body)

        def _step(self, tool_results):
            i = case_of(self._local.prompt)
            return Step(Bill(120, 9), text=answer(int(i % 2 == 0), "Resposta avaliada: " + RIGHT[i % 4]))

    with JudgingOpenAI(model="gpt-5-mini", script=[]) as provider:
        chat = langchain_openai.ChatOpenAI(model="gpt-5-mini", base_url=f"{provider.url}/v1", api_key="sk-test",
                                           max_retries=0, timeout=20)
        metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges={"openai": chat, "mild": lenient},
                                            judge_config=lf.JudgeConfig(structured_output=False, cache=False))
        result = lf.evaluate(ROWS, agent, [metric], progress=False)
    assert len(provider.answers) == 8
    assert any("Lisboa" in r["messages"][-1]["content"] for r in provider.requests)
    assert any("ポルトガルの首都は" in r["messages"][-1]["content"] for r in provider.requests)
    assert any("德国的首都是哪里" in r["messages"][-1]["content"] for r in provider.requests)
    s = result.scores
    assert [x["korrekt/judge/openai/score"] for x in s] == [1.0, 0.0] * 4
    assert s[0]["korrekt/judge/openai/tokens"] == 129 and "korrekt/judge/mild/tokens" not in s[0]
    report = lf.panel_report(result, target_agreement=0.95)["korrekt"]
    # The function judge reports no tokens, so cost is counted in calls; the OpenAI judge alone matches the humans.
    assert report.cost_unit == "calls"
    assert report.cheapest.judges == ("openai",) and report.cheapest.agreement == 1.0
    assert report.full.agreement == pytest.approx(0.75)  # odd rows tie 0/1: half right


class Counted:
    """The truthful judge, counting its calls (in a private attribute: not part of what the cache is keyed by)."""

    __name__ = "counted"

    def __init__(self):
        self._asked = []
        self._lock = threading.Lock()

    def __call__(self, prompt):
        with self._lock:
            self._asked.append(prompt)
        return truthful(prompt)


def test_a_cached_panel_rerun_asks_no_judge_again_and_keeps_each_judges_votes(tmp_path):
    counted = Counted()
    asked = counted._asked

    def build():
        return lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[counted, lenient], judge_config=lf.JudgeConfig(cache=tmp_path / "cache"))

    first = lf.evaluate(ROWS, agent, [build()], progress=False)
    assert len(asked) == 8
    again = lf.evaluate(ROWS, agent, [build()], progress=False)
    assert len(asked) == 8  # every answer from the cache, each judge's under its own key
    key = "korrekt/judge/counted/votes"
    assert [s[key] for s in again.scores] == [s[key] for s in first.scores] == [[float(i % 2 == 0)] for i in range(8)]
    assert [s["korrekt/judge/lenient/votes"] for s in again.scores] == [[1.0]] * 8
    assert all(s["korrekt/judge/counted/calls"] == 0 for s in again.scores)
    assert lf.panel_report(again)["korrekt"].cost_unit == "calls"  # nothing paid: one call a vote assumed


# -- bad input -------------------------------------------------------------------------------------


def test_bad_panels_are_refused_with_the_fix():
    with pytest.raises(MetricError, match=r"metric 'korrekt': judges= is empty; give judges=\[judge_a, judge_b"):
        lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[])
    with pytest.raises(MetricError, match=r"judges\[1\] is the same judge as judges\[0\].*judge_config=lf\.JudgeConfig\(samples="):
        lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[truthful, truthful])
    with pytest.raises(MetricError, match="give judge= \\(one judge\\) or judges= \\(a panel\\), not both"):
        lf.metrics.PointwiseMetric("korrekt", TEMPLATE, truthful, judges=[lenient, flaky])
    with pytest.raises(MetricError, match=r"judges= must be a list of judges or \{name: judge\}, got str"):
        lf.metrics.judged.safety(judges="openai:gpt-4o")
    with pytest.raises(MetricError, match=r"judges\[1\] is None"):
        lf.metrics.judged.safety(judges=[truthful, None])
    with pytest.raises(MetricError, match="has a '/'"):
        lf.metrics.judged.safety(judges={"a/b": truthful, "c": lenient})


def test_two_different_judges_of_one_name_must_be_named():
    def make(word):
        def judge(prompt):
            return answer(1, word)
        return judge

    with pytest.raises(MetricError, match=r"judges\[0\] and judges\[1\] are both called 'judge'; name them"):
        lf.metrics.judged.safety(judges=[make("a"), make("b")])
    metric = lf.metrics.judged.safety(judges={"a": make("a"), "b": make("b")})
    assert [p.name for p in metric.panel] == ["a", "b"]


def test_bad_panel_report_requests_say_what_is_wrong():
    plain = lf.evaluate(ROWS[:2], agent, [lf.metrics.PointwiseMetric("korrekt", TEMPLATE, truthful, judge_config=lf.JudgeConfig(cache=False))],
                        progress=False)
    with pytest.raises(MetricError, match=r"no metric of this result was judged by a panel \(metrics: 'korrekt'\); "
                                          r"build the judged metric with judges="):
        lf.panel_report(plain)
    panel = lf.evaluate(ROWS[:2], agent, [lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[truthful, lenient],
                                                                     judge_config=lf.JudgeConfig(cache=False))], progress=False)
    for bad in (0, 1.5, -0.1, True, "0.9"):
        with pytest.raises(ConfigError, match=r"target_agreement must be a share in \(0, 1\]"):
            lf.panel_report(panel, target_agreement=bad)
    with pytest.raises(MetricError, match="'sicher' is not judged by a panel in this result; panel metrics: 'korrekt'"):
        lf.panel_report(panel, metrics=["sicher"])
    with pytest.raises(ConfigError, match="costs= must give each judge of 'korrekt'.*missing: lenient"):
        lf.panel_report(panel, costs={"truthful": 1.0})
    with pytest.raises(lf.DatasetError, match="human labels name 1 case"):
        lf.panel_report(panel, human_labels={"c99": 1})
    assert lf.panel_report(panel, target_agreement=1)["korrekt"].target_agreement == 1.0


# -- the HTML report ---------------------------------------------------------------------------------


def test_the_html_report_has_a_panels_section_only_when_a_metric_was_judged_by_a_panel():
    from levelfield.report import render as render_report

    def other(prompt: str) -> str:
        return agent(prompt).replace("Lisboa", "Porto")

    panel = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[truthful, lenient, flaky], judge_config=lf.JudgeConfig(cache=False))
    html = render_report(lf.compare(ROWS, {"erste": agent, "zweite": other}, [panel], progress=False))
    assert '<section id="panels"><h2>Panels of judges</h2>' in html and '<a href="#panels">Panels</a>' in html
    assert "korrekt: a panel of 3 judges × 1 sample, 8 rows (8 with human labels)" in html
    assert html.count("effective independent votes:") == 2  # one report per agent
    single = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, truthful, judge_config=lf.JudgeConfig(cache=False))
    plain = render_report(lf.compare(ROWS, {"erste": agent, "zweite": other}, [single], progress=False))
    assert 'id="panels"' not in plain and "#panels" not in plain


def test_adks_judged_criteria_refuse_a_panel_instead_of_ignoring_it():
    with pytest.raises(MetricError, match=r"take one judge \(judge=, with judge_config=lf\.JudgeConfig\(samples=\.\.\.\)\); a panel of judges"):
        lf.metrics.adk.final_response_match_v2(judges=[truthful, lenient])
    with pytest.raises(MetricError, match="a panel of judges"):
        lf.metrics.adk.safety_v1(judges=[truthful, lenient])


RATED = lf.metrics.PointwiseMetricPromptTemplate(
    criteria={"Useful": "How useful is the answer?"}, rating_rubric={str(k): f"{k} of 5" for k in range(1, 6)},
    input_variables=["prompt", "response"])


def test_a_panel_rating_one_to_five_is_reported_against_its_majority_and_refuses_pass_fail_labels():
    def generous(prompt):
        return json.dumps({"score": "5", "explanation": "ótimo"})

    def exact(prompt):
        return json.dumps({"score": str(case_of(prompt) % 5 + 1), "explanation": "genau"})

    def half(prompt):
        i = case_of(prompt)
        return json.dumps({"score": str(i % 5 + 1 if i % 2 else 5), "explanation": "半分"})

    metric = lf.metrics.PointwiseMetric("nuetzlich", RATED, judges=[generous, exact, half], judge_config=lf.JudgeConfig(cache=False))
    rows = [{k: v for k, v in r.items() if k != "human_label"} for r in ROWS]
    result = lf.evaluate(rows, agent, [metric], progress=False)
    assert metric.aggregation == "mean"
    report = lf.panel_report(result, target_agreement=0.75)["nuetzlich"]
    by = {s.name: s.agreement_with_panel for s in report.standings}
    # The panel's majority rating: the modal one of three; "half" agrees with it on every row.
    assert by["half"] == 1.0 and report.cheapest.judges == ("half",)
    with pytest.raises(MetricError, match=r"metric 'nuetzlich': human labels are pass/fail, but its judges' ratings are \[2.0, 3.0"):
        lf.panel_report(result, human_labels={r["case_id"]: 1 for r in ROWS})


def test_a_saved_and_reloaded_result_gives_the_same_panel_report(tmp_path):
    from levelfield._core.results.result import EvalResult

    metric = lf.metrics.PointwiseMetric("korrekt", TEMPLATE, judges=[truthful, lenient, flaky], judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(ROWS, agent, [metric], progress=False, out=tmp_path / "run")
    back = EvalResult.load(tmp_path / "run")  # no metric objects: the panel is read from the rows' columns
    assert back.scores[2]["korrekt/judge/flaky/votes"] == [None]
    assert str(lf.panel_report(back)) == str(lf.panel_report(result))


def test_a_panels_provenance_names_every_judge_and_changes_when_one_judge_changes():
    from levelfield.judge.provenance import judged_details

    def judge_a(prompt):
        return '{"explanation": "ok", "rating": 1}'

    def judge_b(prompt):
        return '{"explanation": "ok", "rating": 1}'

    def judge_c(prompt):
        return '{"explanation": "ok", "rating": 0}'

    def details(*judges):
        metric = lf.metrics.PointwiseMetric(metric="m", metric_prompt_template="Is it right? {response}",
                                            judges=list(judges), judge_config=lf.JudgeConfig(cache=False))
        return judged_details(metric)

    ab, ac = details(judge_a, judge_b), details(judge_a, judge_c)
    assert ab["judge_model"] == "panel of judge_a, judge_b" and set(ab["judge_settings"]) == {"judge_a", "judge_b"}
    assert ab["judge_sha256"] != ac["judge_sha256"] and details(judge_a, judge_b)["judge_sha256"] == ab["judge_sha256"]
