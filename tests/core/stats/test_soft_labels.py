"""Soft labels: the calibration-corrected rate from a judge's probabilities, checked by simulation
against a judge of known calibration, and the judge's calibration (Brier, ECE, reliability table)
against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levelfield._core.errors import ConfigError
from levelfield._core.stats.judge_correction import correct_rate
from levelfield._core.stats.soft_labels import calibration, checked_probabilities, soft_rate
from levelfield.judge.probability import TokenLogprob, pass_probability, stated_probability, verdict_probability


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# The judge: a logit z ~ N(-0.4, 1.6²) gives p = sigmoid(z); its known calibration is
# P(human pass | p) = sigmoid(0.8·logit(p) + 0.3) — overconfident and shifted, as judges are.
MU, SD, SLOPE, SHIFT = -0.4, 1.6, 0.8, 0.3


def _truth() -> float:
    """E[P(pass | p)] over the judge's p, by Gauss–Hermite quadrature (independent of any sampling)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w * _sigmoid(SLOPE * (MU + SD * x) + SHIFT)) / math.sqrt(2 * math.pi))


def test_soft_rate_covers_the_truth_and_is_narrower_than_threshold_then_correct():
    """1,000 simulated runs of 1,000 judged rows with 10 % human labels: the 95 % interval of the
    calibration-corrected rate covers the true rate ≥ 93 % of the time, and is on average narrower
    than Rogan–Gladen's on the thresholded verdicts with the same labels."""
    runs, rows, labeled = 1000, 1000, 100
    rng = np.random.default_rng(20261127)
    p = _sigmoid(rng.normal(MU, SD, (runs, rows)))
    y = (rng.random((runs, rows)) < _sigmoid(SLOPE * np.log(p / (1 - p)) + SHIFT)).astype(float)
    chosen = np.argsort(rng.random((runs, rows)), axis=1)[:, :labeled]  # a random 10 % of each run's rows
    human = np.full((runs, rows), np.nan)
    np.put_along_axis(human, chosen, np.take_along_axis(y, chosen, axis=1), axis=1)
    truth = _truth()
    soft_cover = hard_cover = 0
    soft_width, hard_width = [], []
    for r in range(runs):
        soft = soft_rate(p[r], human[r])
        hard = correct_rate((p[r] >= 0.5).astype(float), human[r])
        soft_cover += soft.low <= truth <= soft.high
        hard_cover += hard.low <= truth <= hard.high
        soft_width.append(soft.high - soft.low)
        hard_width.append(hard.high - hard.low)
    coverage = soft_cover / runs
    print(f"truth {truth:.4f}; soft coverage {coverage:.3f}, mean width {np.mean(soft_width):.4f}; "
          f"Rogan-Gladen coverage {hard_cover / runs:.3f}, mean width {np.nanmean(hard_width):.4f}")
    assert coverage >= 0.93
    assert coverage <= 0.99  # an interval that always covers would be too wide to be the nominal 95 %
    assert np.mean(soft_width) < np.nanmean(hard_width)


def test_soft_rate_matches_the_regression_estimator_written_out():
    """A small example against the two-phase regression estimator computed by np.polyfit."""
    p = np.array([0.9, 0.8, 0.2, 0.1, 0.6, 0.4, 0.7, 0.3, 0.95, 0.05])
    human = np.array([1, 1, 0, 0, 1, 0, np.nan, np.nan, np.nan, np.nan])
    slope, intercept = np.polyfit(p[:6], human[:6], 1)
    expected = float(np.mean(intercept + slope * p))
    residuals = human[:6] - (intercept + slope * p[:6])
    s_e2 = residuals @ residuals / 4
    var = s_e2 * (1 / 6 - 1 / 10) + np.var(human[:6], ddof=1) / 10
    from scipy.stats import t

    half = t.ppf(0.975, 4) * math.sqrt(var)
    got = soft_rate(p, human)
    assert got.estimate == pytest.approx(min(1, max(0, expected)))
    assert got.slope == pytest.approx(slope)
    assert got.low == pytest.approx(max(0.0, expected - half))
    assert got.high == pytest.approx(min(1.0, expected + half))
    assert (got.rows, got.labeled) == (10, 6)


def test_soft_rate_needs_three_labels_and_says_so():
    with pytest.raises(ConfigError, match=r"safety: 2 human label\(s\).*at least 3.*judge_scores=\"verdict\""):
        soft_rate([0.9, 0.1, 0.5], [1, 0, np.nan], metric="safety")


def test_probabilities_outside_0_1_are_refused_with_the_row():
    with pytest.raises(ConfigError, match=r"safety/p: probability 1.3 on row 1 is outside \[0, 1\]"):
        checked_probabilities([0.2, 1.3, -0.1], "safety/p")
    with pytest.raises(ConfigError, match="outside"):
        soft_rate([0.2, 83.0, 0.5, 0.4], [1, 0, 1, 0])


def test_brier_ece_and_reliability_by_hand():
    """Four labelled rows in two bins of width 0.5, computed by hand:
    Brier = (0.1² + 0.6² + 0.6² + 0.2²)/4 = 0.1925; bin [0, 0.5): p 0.1, 0.4 vs labels 0, 1 → mean p 0.25,
    rate 0.5; bin [0.5, 1]: p 0.6, 0.8 vs labels 0, 1 → mean p 0.7, rate 0.5; ECE = ½·0.25 + ½·0.2 = 0.225."""
    cal = calibration([0.1, 0.4, 0.6, 0.8, 0.3], [0, 1, 0, 1, np.nan], bins=2, metric="m")
    assert cal.labeled == 4
    assert cal.brier == pytest.approx((0.01 + 0.36 + 0.36 + 0.04) / 4)
    assert cal.brier == pytest.approx(0.1925)
    assert cal.ece == pytest.approx(0.5 * 0.25 + 0.5 * 0.2)
    table = cal.table()
    assert list(table["bin"]) == ["[0.0, 0.5)", "[0.5, 1.0]"]
    assert list(table["mean_p"]) == pytest.approx([0.25, 0.7])
    assert list(table["observed_rate"]) == pytest.approx([0.5, 0.5])
    assert list(table["count"]) == [2, 2]
    assert cal.summary_items() == {"m/judge_brier": pytest.approx(0.1925), "m/judge_ece": pytest.approx(0.225)}
    words = cal.describe()
    assert "Brier 0.193" in words or "Brier 0.192" in words
    assert "ECE 0.225" in words and "[0.5, 1.0]" in words


def test_a_perfectly_calibrated_sure_judge_scores_zero():
    cal = calibration([1.0, 0.0, 1.0], [1, 0, 1], bins=10)
    assert cal.brier == 0 and cal.ece == 0
    assert [row[4] for row in cal.bins] == [1, 2]  # p = 1 falls in the top bin, closed at 1


def test_calibration_without_labelled_probabilities_says_what_is_missing():
    with pytest.raises(ConfigError, match="no row has both a judge probability and a human label"):
        calibration([0.5, np.nan], [np.nan, 1], metric="m")
    with pytest.raises(ConfigError, match="bins=0"):
        calibration([0.5], [1], bins=0)


# -- reading a probability from an answer --------------------------------------------------------

YES_NO = {"yes": 1.0, "no": 0.0}


def _tokens(*parts: tuple[str, float] | tuple[str, float, tuple[tuple[str, float], ...]]) -> list[TokenLogprob]:
    return [TokenLogprob(part[0], part[1], part[2] if len(part) > 2 else ()) for part in parts]


def test_the_verdict_token_alternatives_give_the_probability():
    tokens = _tokens(('{"', 0.0), ("verdict", 0.0), ('":', 0.0), (' "', 0.0),
                     ("yes", math.log(0.7), (("yes", math.log(0.7)), ("no", math.log(0.2)), ("maybe", math.log(0.1)))),
                     ('"}', 0.0))
    # "maybe" is not a rating: the mass is shared between yes and no only.
    assert verdict_probability(tokens, YES_NO, 1.0) == pytest.approx(0.7 / 0.9)


def test_a_token_that_disagrees_with_the_verdict_gives_no_probability():
    tokens = _tokens(('{"verdict": "', 0.0), ("no", math.log(0.6), (("no", math.log(0.6)), ("yes", math.log(0.4)))),
                     ('"}', 0.0))
    assert verdict_probability(tokens, YES_NO, 1.0) is None  # the text was read as yes: something is off
    assert verdict_probability(tokens, YES_NO, 0.0) == pytest.approx(0.4)


def test_only_the_chosen_tokens_logprob_leaves_the_rest_to_the_other_verdict():
    tokens = _tokens(("no", math.log(0.9)))
    assert verdict_probability(tokens, YES_NO, 0.0) == pytest.approx(0.1)


def test_a_stated_probability_comes_before_logprobs_and_confidence_is_of_the_verdict():
    assert stated_probability('{"verdict": "yes", "probability": 0.83}', None, True) == (0.83, None)
    assert stated_probability('{"verdict": "no", "confidence": "90%"}', None, False)[0] == pytest.approx(0.1)
    p, problem = stated_probability('{"verdict": "yes", "probability": 83}', None, True)
    assert p is None and "outside [0, 1]" in problem and "0.83" in problem
    assert stated_probability('{"verdict": "yes"}', None, True) == (None, None)
    tokens = _tokens(("yes", math.log(0.6), (("yes", math.log(0.6)), ("no", math.log(0.4)))))
    assert pass_probability('{"verdict": "yes", "probability": 0.9}', None, tokens, YES_NO, 1.0) == (0.9, None)
    assert pass_probability("yes", None, tokens, YES_NO, 1.0)[0] == pytest.approx(0.6)
    assert math.isnan(pass_probability("yes", None, None, YES_NO, 1.0)[0])  # a verdict only


def test_a_verdict_that_starts_inside_a_token_is_read_after_the_shared_lead():
    """Tokenizers often glue the opening quote to the rating (`"1`): alternatives are compared past it."""
    tokens = _tokens(('{"score":', 0.0), (' "1', math.log(0.55), ((' "1', math.log(0.55)), (' "0', math.log(0.4)),
                                                                   ("1", math.log(0.05)))), ('"}', 0.0))
    scores = {"1": 1.0, "0": 0.0}
    # "1" without the lead is another place in the text: left out, so p = 0.55 / 0.95.
    assert verdict_probability(tokens, scores, 1.0) == pytest.approx(0.55 / 0.95)
