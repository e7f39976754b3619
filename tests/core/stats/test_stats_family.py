"""The family of pairwise comparisons: Tarone's exclusion of pairs that can never be significant,
Holm within what is left, intervals adjusted the same way. Expected values are worked out here
from McNemar's score statistic (b − c)/√(b + c) and the procedures' definitions, not with
levelfield's functions (Tango's interval is checked against a brute-force search in test_tango.py)."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

import levelfield as lf
from levelfield._core.stats import inference as stats

ALPHA = 0.05
EXACT = "trajectory_exact_match"
# Twelve cases in four languages; every reference is one call naming the room.
ROOMS = ["客厅", "寝室", "Wohnzimmer", "cozinha"] * 3
CASES = [
    {"case_id": f"c{i}", "prompt": f"{i} {room}", "reference_trajectory": [{"tool_name": "lights", "tool_input": {"room": room}}]}
    for i, room in enumerate(ROOMS)
]


def _answer(prompt, wrong_below):
    i, room = prompt.split(" ", 1)
    room = "nowhere" if int(i) < wrong_below else room
    return {"response": "ok", "predicted_trajectory": [{"tool_name": "lights", "tool_input": {"room": room}}]}


def right(prompt):
    return _answer(prompt, 0)


def wrong_nine(prompt):
    return _answer(prompt, 9)  # wrong on c0..c8


def wrong_two(prompt):
    return _answer(prompt, 2)  # wrong on c0, c1


def mcnemar_p(wins, losses, n=12):
    """Two-sided p of McNemar's score test on n paired cases, (b − c)/√((b + c) · n/(n − 1)) against the normal
    (the variance corrected by n/(n − 1)); 1 with no discordant case."""
    if wins + losses == 0:
        return 1.0
    return float(2 * scipy_stats.norm.sf(abs(wins - losses) / math.sqrt((wins + losses) * n / (n - 1))))


def test_mcnemar_smallest_p_is_the_score_test_with_every_discordant_case_one_way():
    t = stats.paired_test([1, 1, 1, 0, 0, 1], [1, 0, 1, 0, 1, 1])  # one win, one loss
    assert t.p_value == pytest.approx(mcnemar_p(1, 1, 6)) == 1.0
    assert t.p_min == pytest.approx(mcnemar_p(2, 0, 6))


def test_identical_scores_can_never_be_significant():
    assert stats.paired_test([1, 0, 1], [1, 0, 1]).p_min == 1.0
    assert stats.paired_test([0.2, 0.5], [0.2, 0.5]).p_min == 1.0


def test_wilcoxon_smallest_p_is_the_p_when_every_difference_goes_one_way():
    a, b = np.array([0.9, 0.4, 0.7, 0.6, 0.8]), np.array([0.1, 0.5, 0.3, 0.2, 0.5])
    t = stats.paired_test(a, b, test="wilcoxon")
    # Five non-zero differences, all of one sign: the exact signed-rank p is 2 / 2^5.
    assert t.p_min == pytest.approx(2 / 2**5)
    assert t.p_value > t.p_min


def test_tarone_leaves_out_the_pairs_that_cannot_reach_the_level_they_would_be_tested_at():
    # Four pairs with 8 discordant cases (smallest p 2/2^8 = 0.0078) and six identical pairs (1).
    # m=1..3: all four have p_min < 0.05/m, K(m)=4 > m; m=4: 4 · 0.0078 = 0.031 < 0.05, K(4)=4 ≤ 4.
    p_min = [2 * 0.5**8] * 4 + [1.0] * 6
    assert stats.tarone_family(p_min, ALPHA).tolist() == [True] * 4 + [False] * 6


def test_tarone_family_can_be_empty_when_no_test_can_pass_its_adjusted_level():
    # Four pairs with 7 discordant cases (smallest p 2/2^7 = 0.0156): m=3 still counts all four
    # (3 · 0.0156 = 0.047 < 0.05), and at m=4, 4 · 0.0156 = 0.0625: none could pass.
    assert stats.tarone_family([2 * 0.5**7] * 4, ALPHA).tolist() == [False] * 4


def test_holm_runs_within_the_family_only():
    p = [0.0078125, 0.02, 0.04, 0.3]
    p_min = [0.0078125, 0.001, 0.001, 0.3]
    adjusted, family = stats.family_adjusted(p, p_min, ALPHA)
    # Family: m=1 counts three p_min under 0.05, m=2 three under 0.025, m=3 three under 0.0167: K(3)=3.
    assert family.tolist() == [True, True, True, False]
    # Holm over three: 3 · 0.0078 = 0.0234, 2 · 0.02 = 0.04, 1 · 0.04 = 0.04 (already non-decreasing).
    assert adjusted[:3] == pytest.approx([3 * 0.0078125, 2 * 0.02, 0.04])
    assert math.isnan(adjusted[3])


@pytest.fixture(scope="module")
def four():
    agents = {"right": right, "copy": right, "wrong_nine": wrong_nine, "wrong_two": wrong_two}
    return lf.compare(CASES, agents, [EXACT], progress=False)


def test_pairwise_p_values_follow_tarone_then_holm(four):
    table = four.pairwise(EXACT).set_index(["agent_a", "agent_b"])
    # Discordant cases of each pair (wins of A, losses of A), read off the agents above.
    discordant = {("right", "copy"): (0, 0), ("right", "wrong_nine"): (9, 0), ("right", "wrong_two"): (2, 0),
                  ("copy", "wrong_nine"): (9, 0), ("copy", "wrong_two"): (2, 0), ("wrong_nine", "wrong_two"): (0, 7)}
    for pair, (w, lost) in discordant.items():
        assert table.loc[pair, "p_value"] == pytest.approx(mcnemar_p(w, lost))
        assert table.loc[pair, "p_min"] == pytest.approx(mcnemar_p(w + lost, 0))
    # p_min: 1, 0.0037, 0.176, 0.0037, 0.176, 0.0100. K(1)=3 > 1, K(2)=3 > 2 (all three under 0.025),
    # K(3)=3 ≤ 3 (0.0100 < 0.0167): the family is the three pairs with 9 or 7 discordant cases.
    in_family = {("right", "wrong_nine"), ("copy", "wrong_nine"), ("wrong_nine", "wrong_two")}
    assert {pair for pair in discordant if table.loc[pair, "in_family"]} == in_family
    # Holm over three: 3 · p(9, 0), then 2 · p(9, 0) raised to the step before, then 1 · p(0, 7).
    first = 3 * mcnemar_p(9, 0)
    expected = {("right", "wrong_nine"): first, ("copy", "wrong_nine"): first,
                ("wrong_nine", "wrong_two"): max(first, mcnemar_p(0, 7))}
    for pair in discordant:
        if pair in expected:
            assert table.loc[pair, "p_holm"] == pytest.approx(expected[pair]) and table.loc[pair, "significant"]
        else:
            assert math.isnan(table.loc[pair, "p_holm"]) and not table.loc[pair, "significant"]


def test_pairwise_intervals_are_tangos_interval_at_the_level_holm_tested_each_pair(four):
    from levelfield._core.stats.paired import tango_interval

    table = four.pairwise(EXACT).set_index(["agent_a", "agent_b"])
    assert table.attrs["family"] == 3
    # Holm over the three in the family: p(9, 0) twice at alpha/3 (equal evidence, the stricter of
    # alpha/3 and alpha/2), then p(0, 7) at alpha; the pairs outside Tarone's family (m = 3) at alpha/3.
    levels = {("right", "wrong_nine"): ALPHA / 3, ("copy", "wrong_nine"): ALPHA / 3, ("wrong_nine", "wrong_two"): ALPHA,
              ("right", "copy"): ALPHA / 3, ("right", "wrong_two"): ALPHA / 3, ("copy", "wrong_two"): ALPHA / 3}
    n = len(four.case_ids)
    for pair, alpha in levels.items():
        row = table.loc[pair]
        assert row.ci_level == pytest.approx(1 - alpha)
        assert (row.ci_low, row.ci_high) == pytest.approx(tango_interval(int(row.wins), int(row.losses), n, alpha))
        assert (row.ci_low > 0 or row.ci_high < 0) == bool(row.significant)
        if row.wins + row.losses == 0:
            # No case differs: the score interval is ±k/(n + k), k = z² · n/(n − 1), symmetric about 0.
            k = scipy_stats.norm.isf(alpha / 2) ** 2 * n / (n - 1)
            assert (row.ci_low, row.ci_high) == pytest.approx((-k / (n + k), k / (n + k)))


def test_the_demo_pairs_of_careful_and_hasty_are_significant_once_identical_agents_are_left_out():
    from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

    agents = {"function": careful_agent, "copy-1": careful_agent, "copy-2": careful_agent, "copy-3": careful_agent,
              "function-hasty": hasty_agent}
    cmp = lf.compare("samples/home_automation/dataset.jsonl", agents, [EXACT], progress=False)
    row = cmp.pairwise(EXACT).set_index(["agent_a", "agent_b"]).loc[("function", "function-hasty")]
    assert (row.wins, row.ties, row.losses) == (8, 10, 0)
    # Four careful-vs-hasty pairs in the family (6 identical pairs out): Holm's first step is 4 · p(8, 0).
    assert row.p_holm == pytest.approx(4 * mcnemar_p(8, 0, 18)) and row.significant
    assert cmp.verdict().headline.startswith("function, copy-1, copy-2 and copy-3 tie for best on 1 of 1 metrics; "
                                             "function-hasty is worst")


def test_a_pair_that_cannot_be_significant_names_its_reason(four):
    from levelfield.comparison._text import pairwise_lines
    from levelfield.comparison._verdict import untestable_reason

    lines = "\n".join(pairwise_lines(four, EXACT))
    # right vs wrong_two: 2 differing cases; even both one way, the score test's p is above 0.05 on its own.
    assert "cannot be significant: too few cases differ (2)" in lines
    assert "cannot be significant: identical on every case" in lines
    # A pair that could pass 0.05 alone but not the level the adjustment asks for says that instead.
    assert untestable_reason(5, 0.03, 0.05).startswith("the adjustment across the pairs")
    assert untestable_reason(2, 0.16, 0.05) == "too few cases differ (2)"
