"""The verdict: best and worst with the reason, per metric the best agent and, against each other agent,
significant or not (adjusted across the pairs that can differ), in words."""

import math

import pytest

import levelfield as lf
from levelfield.comparison._text import format_comparison
from levelfield.comparison._verdict import headline, verdict_lines, verdicts
from levelfield.report import render as render_report

# Twelve cases in four languages; "right" always answers the reference, "wrong" never does, and
# "almost" misses two cases: right vs wrong is significant, right vs almost is not.
TEXTS = ["灯已打开", "電気をつけました", "Das Licht ist an", "A luz está acesa"] * 3
CASES = [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": t} for i, t in enumerate(TEXTS)]
ANSWERS = {f"question {i}": t for i, t in enumerate(TEXTS)}


def right(prompt):
    return ANSWERS[prompt]


def wrong(prompt):
    return "no idea"


def almost(prompt):
    return "no idea" if prompt in ("question 0", "question 1") else ANSWERS[prompt]


@pytest.fixture(scope="module")
def cmp():
    return lf.compare(CASES, {"right": right, "wrong": wrong, "almost": almost}, ["exact_match"], progress=False)


def test_best_agent_is_the_one_with_the_highest_mean(cmp):
    (v,) = verdicts(cmp)
    assert v.best == ("right",) and v.mean == 1.0


def test_a_clear_lead_is_called_significant_with_its_adjusted_p(cmp):
    (v,) = verdicts(cmp)
    vs_wrong = next(x for x in v.versus if x.other == "wrong")
    assert vs_wrong.significant and vs_wrong.difference == 1.0 and vs_wrong.p_holm < 0.05


def test_a_lead_too_small_to_ever_be_significant_says_so(cmp):
    (v,) = verdicts(cmp)
    vs_almost = next(x for x in v.versus if x.other == "almost")
    assert not vs_almost.significant and not vs_almost.in_family
    # Two discordant cases of 12: the score test's p can never go under 2·Φ(−√(2 · 11/12)) = 0.176.
    assert ("not significantly better than almost (p=0.176 before adjustment; cannot be significant: too few "
            "cases differ (2))") in v.sentence()


def test_sentence_names_the_winner_and_whom_it_beats(cmp):
    sentence = verdicts(cmp)[0].sentence()
    assert sentence.startswith("exact_match: right is best (1.000); significantly better than wrong (adjusted p=0.002)")


def test_headline_says_who_leads_who_trails_and_whether_significantly(cmp):
    assert headline(cmp) == ("right is best on 1 of 1 metrics; wrong is worst (lowest on 1 of 1): its largest gap is "
                             "on exact_match (0.000 against 1.000). The lead is significant over some agents but, on "
                             "no metric, over all of them at the 95% level.")


def test_tied_leaders_are_named_together():
    cmp = lf.compare(CASES, {"right": right, "copy": right, "wrong": wrong}, ["exact_match"], progress=False)
    (v,) = verdicts(cmp)
    assert v.best == ("right", "copy")
    assert v.sentence().startswith("exact_match: right and copy tie for best (1.000)")
    assert [x.other for x in v.versus] == ["wrong"]


def test_a_single_agent_has_no_verdict():
    cmp = lf.compare(CASES, {"right": right}, ["exact_match"], progress=False)
    assert verdict_lines(cmp) == []
    assert 'id="verdict"' not in render_report(cmp)


def test_metric_nobody_could_score_says_so():
    cases = [{"case_id": "x", "prompt": "question 0"}]  # no reference: exact_match is NaN for all
    cmp = lf.compare(cases, {"right": right, "wrong": wrong}, ["exact_match"], progress=False)
    (v,) = verdicts(cmp)
    assert v.best == () and math.isnan(v.mean)
    assert v.sentence() == "exact_match: no agent could be scored."


def test_cli_prints_the_verdict_in_words(cmp):
    text = format_comparison(cmp)
    assert "Verdict: right is best on 1 of 1 metrics; wrong is worst" in text
    assert "  exact_match: right is best (1.000); significantly better than wrong" in text


def test_cli_pairwise_lines_say_not_significant(cmp):
    line = next(x for x in format_comparison(cmp).splitlines() if " vs " in x and "right" in x and "almost" in x)
    assert "cannot be significant: too few cases differ" in line


def test_report_opens_with_the_verdict(cmp):
    page = render_report(cmp)
    assert page.index('id="verdict"') < page.index('id="summary"')
    assert "significantly better than wrong" in page and "not significantly better than almost" in page


def test_report_shows_non_latin_responses_verbatim(cmp):
    page = render_report(cmp)
    for text in ("灯已打开", "電気をつけました", "Das Licht ist an", "A luz está acesa"):
        assert text in page


def test_headline_of_agents_that_tie_everywhere_says_they_tie():
    cmp = lf.compare(CASES, {"right": right, "copy": right}, ["exact_match"], progress=False)
    assert headline(cmp) == "right and copy tie for best on 1 of 1 metrics. No difference between agents is significant at the 95% level."


def test_headline_names_the_metrics_where_the_leader_beats_everyone_significantly():
    cmp = lf.compare(CASES, {"right": right, "wrong": wrong}, ["exact_match"], progress=False)
    assert headline(cmp).endswith("The lead over every other agent is significant on 1 of 1 metrics (exact_match).")


def test_headline_of_tied_leaders_that_beat_the_rest_says_so():
    cmp = lf.compare(CASES, {"right": right, "copy": right, "wrong": wrong}, ["exact_match"], progress=False)
    assert headline(cmp).startswith("right and copy tie for best on 1 of 1 metrics; wrong is worst")
    assert headline(cmp).endswith("The lead over every other agent is significant on 1 of 1 metrics (exact_match).")


def test_three_tied_leaders_are_listed_with_commas():
    cmp = lf.compare(CASES, {"right": right, "copy": right, "again": right, "wrong": wrong}, ["exact_match"],
                     progress=False)
    assert verdicts(cmp)[0].sentence().startswith("exact_match: right, copy and again tie for best (1.000)")


def test_verdict_of_a_comparison_is_a_method_and_prints_as_its_lines(cmp):
    found = cmp.verdict()
    assert found.best == ("right",) and found.worst == "wrong"
    assert str(found).splitlines() == [found.headline, *(v.sentence() for v in found.metrics)]


def crashes_on_japanese(prompt):
    if prompt in ("question 1", "question 5", "question 9"):
        raise TimeoutError("応答がありません")
    return ANSWERS[prompt]


def test_worst_agent_whose_runs_fail_is_named_with_its_most_common_error():
    cmp = lf.compare(CASES, {"right": right, "crashy": crashes_on_japanese}, ["exact_match"], progress=False)
    assert cmp.verdict().reason == "its runs fail with TimeoutError in 3 of 12 cases"
    assert "crashy is worst (lowest on 1 of 1): its runs fail with TimeoutError in 3 of 12 cases." in cmp.verdict().headline


TRAJECTORY_CASES = [
    {"case_id": f"t{i}", "prompt": city,
     "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"city": city}},
                              {"tool_name": "book", "tool_input": {"city": city}}]}
    for i, city in enumerate(["北京", "東京", "München", "São Paulo"] * 2)
]


def careful(prompt):
    calls = [{"tool_name": "lookup", "tool_input": {"city": prompt}}, {"tool_name": "book", "tool_input": {"city": prompt}}]
    return {"response": "ok", "predicted_trajectory": calls}


def hasty(prompt):
    # Skips the look-up everywhere but in München; books the wrong city for São Paulo.
    calls = careful(prompt)["predicted_trajectory"]
    if prompt != "München":
        calls = calls[1:]
    if prompt == "São Paulo":
        calls[-1] = {"tool_name": "book", "tool_input": {"city": "Sao Paulo"}}
    return {"response": "ok", "predicted_trajectory": calls}


def test_worst_agent_is_named_with_the_reference_call_it_skips_most():
    cmp = lf.compare(TRAJECTORY_CASES, {"careful": careful, "hasty": hasty}, ["trajectory_exact_match"], progress=False)
    assert cmp.verdict().reason == "it skips the reference call lookup in 6 of 8 cases"
    assert cmp.verdict().headline.startswith(
        "careful is best on 1 of 1 metrics; hasty is worst (lowest on 1 of 1): it skips the reference call lookup "
        "in 6 of 8 cases.")


def test_reason_counts_runs_when_there_are_trials():
    cmp = lf.compare(TRAJECTORY_CASES, {"careful": careful, "hasty": hasty}, ["trajectory_exact_match"], trials=2,
                     progress=False)
    assert cmp.verdict().reason == "it skips the reference call lookup in 12 of 16 runs"


def test_print_of_a_comparison_shows_verdict_then_summary_in_one_screen(cmp, capsys):
    print(cmp)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 30
    assert lines[0].startswith("Verdict: right is best on 1 of 1 metrics; wrong is worst")
    assert any(line.startswith("exact_match ") and "1.000 [" in line for line in lines)
    assert lines[-1] == "(mean [95% interval] over 12 cases; failed runs count as 0: no run failed)"
