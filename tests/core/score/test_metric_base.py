"""What a metric is (an abstract base with a worked example) and trajectory metrics that explain their scores."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import levelfield as lf
from levelfield._core.score.matching import align
from levelfield._core.score.metrics import base
from levelfield._core.score.metrics.base import ScoringContext


def call(name: str, **args) -> lf.ToolCall:
    return lf.ToolCall(tool_name=name, tool_input=args)


def explain(metric: lf.metrics.Metric, predicted, reference) -> lf.metrics.Score:
    ctx = ScoringContext(case_id="c", prompt="p", response="r", predicted_trajectory=predicted, reference_trajectory=reference)
    return metric.score(ctx)


WEATHER, LOCATE, BOOK = call("get_weather", city="Paris"), call("locate_user"), call("book_taxi", to="Gare du Nord")

# --- the Metric base ---------------------------------------------------------------------------


def test_the_example_in_metric_docstring_runs():
    finder = doctest.DocTestFinder()
    (test,) = [t for t in finder.find(base) if t.name.endswith(".Metric")]
    result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test)
    assert result.attempted >= 4 and result.failed == 0


def test_a_metric_without_score_cannot_be_created():
    class Unfinished(lf.metrics.Metric):
        name = "unfinished"

    with pytest.raises(TypeError, match="abstract"):
        Unfinished()


def test_a_duck_typed_metric_object_is_accepted_and_scored():
    class ResponseLength:  # not a Metric subclass: a name and score(ctx) are enough
        name = "response_length"

        def score(self, ctx):
            return float(len(ctx.response))

    (resolved,) = lf.metrics.resolve_metrics([ResponseLength()])
    assert isinstance(resolved, lf.metrics.Metric)
    table = lf.evaluate([{"prompt": "p", "response": "four"}], metrics=[ResponseLength()], progress=False).metrics_table
    assert table["response_length/score"].tolist() == [4.0]


def test_a_duck_typed_metric_keeps_its_own_requires():
    class NeedsReference:
        name = "needs_reference"
        requires = ("reference",)

        def score(self, ctx):
            return 1.0

    rows = [{"prompt": "p", "response": "r", "reference": "r"}, {"prompt": "q", "response": "r"}]
    scores = lf.evaluate(rows, metrics=[NeedsReference()], progress=False).metrics_table["needs_reference/score"]
    assert scores.iloc[0] == 1.0 and scores.isna().iloc[1]


# --- trajectory metrics explain themselves ------------------------------------------------------


def test_recall_names_the_missing_call():
    score = explain(lf.metrics.TrajectoryRecall(), [LOCATE], [LOCATE, WEATHER])
    assert (score.value, score.explanation) == (0.5, "matched 1/2 reference calls; missing get_weather")


def test_precision_names_the_extra_call():
    score = explain(lf.metrics.TrajectoryPrecision(), [LOCATE, BOOK, WEATHER], [LOCATE, WEATHER])
    assert score.value == pytest.approx(2 / 3)
    assert score.explanation == "matched 2/3 predicted calls; extra book_taxi"


def test_in_order_match_names_the_calls_out_of_order():
    score = explain(lf.metrics.TrajectoryInOrderMatch(), [WEATHER, LOCATE], [LOCATE, WEATHER])
    assert score.value == 0.0
    assert score.explanation == "2 reference calls made, but out of order: reference call #1 locate_user came after #2 get_weather"


def test_in_order_match_that_holds_still_mentions_extra_calls():
    score = explain(lf.metrics.TrajectoryInOrderMatch(), [LOCATE, BOOK, WEATHER], [LOCATE, WEATHER])
    assert (score.value, score.explanation) == (1.0, "2 reference calls made in order; extra book_taxi")


def test_exact_match_says_what_differs():
    score = explain(lf.metrics.TrajectoryExactMatch(), [LOCATE, BOOK], [LOCATE, WEATHER, WEATHER])
    assert score.value == 0.0
    assert score.explanation == "2 calls made, the reference has 3 calls; missing get_weather, get_weather; extra book_taxi"


def test_any_order_match_names_a_call_made_with_other_arguments():
    score = explain(lf.metrics.TrajectoryAnyOrderMatch(), [call("get_weather", city="Lyon")], [WEATHER])
    assert (score.value, score.explanation) == (0.0, "matched 0/1 reference calls; missing get_weather (args differ)")


def test_a_perfect_trajectory_is_explained_too():
    got = [explain(m, [LOCATE, WEATHER], [LOCATE, WEATHER]) for m in _VERTEX_METRICS]
    assert [s.value for s in got] == [1.0] * 5
    assert got[0].explanation == "calls match the reference one for one, in order (2 calls)"


def test_long_lists_of_calls_are_cut_with_a_count():
    reference = [call(f"tool_{i}") for i in range(8)]
    score = explain(lf.metrics.TrajectoryRecall(), [], reference)
    assert score.explanation.endswith("missing tool_0, tool_1, tool_2, tool_3, tool_4 and 3 more")


def test_explanations_keep_non_latin_tool_names():
    reference = [call("查询天气", 城市="北京"), call("予約する"), call("Straßenbahn_buchen", Ziel="Köln")]
    predicted = [call("予約する"), call("Straßenbahn_buchen", Ziel="München")]
    score = explain(lf.metrics.TrajectoryRecall(), predicted, reference)
    assert score.explanation == "matched 1/3 reference calls; missing 查询天气, Straßenbahn_buchen (args differ)"


def test_explanations_land_in_the_metrics_table():
    rows = [
        {
            "prompt": "Weather where I am?",
            "response": "Sunny.",
            "predicted_trajectory": [LOCATE.to_vertex()],
            "reference_trajectory": [LOCATE.to_vertex(), WEATHER.to_vertex()],
        }
    ]
    result = lf.evaluate(rows, metrics=["trajectory_recall", "trajectory_exact_match"], progress=False)
    assert "trajectory_recall/explanation" not in result.metrics_table  # saved predictions: explained when asked
    table = result.with_explanations()
    assert result.explain("0")["trajectory_recall"].explanation == "matched 1/2 reference calls; missing get_weather"
    assert table["trajectory_recall/explanation"].iloc[0] == "matched 1/2 reference calls; missing get_weather"
    assert table["trajectory_exact_match/score"].iloc[0] == 0.0
    assert "missing get_weather" in table["trajectory_exact_match/explanation"].iloc[0]


# --- numbers unchanged: every value is still DESIGN.md's formula over the alignment ---------------

_VERTEX_METRICS = [
    lf.metrics.TrajectoryExactMatch(),
    lf.metrics.TrajectoryInOrderMatch(),
    lf.metrics.TrajectoryAnyOrderMatch(),
    lf.metrics.TrajectoryPrecision(),
    lf.metrics.TrajectoryRecall(),
]
_calls = st.builds(
    lambda name, args: lf.ToolCall(tool_name=name, tool_input=args),
    st.sampled_from(["a", "b", "c"]),
    st.dictionaries(st.sampled_from(["k"]), st.integers(0, 2), max_size=1),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_calls, max_size=6), st.lists(_calls, max_size=6))
def test_values_are_the_formulas_over_the_alignment(predicted, reference):
    a = align(predicted, reference)
    precision = (1.0 if a.n_reference == 0 else 0.0) if a.n_predicted == 0 else a.matched / a.n_predicted
    recall = 1.0 if a.n_reference == 0 else a.matched / a.n_reference
    expected = [float(a.exact), float(a.in_order), float(a.any_order), precision, recall]
    got = [explain(m, predicted, reference) for m in _VERTEX_METRICS]
    assert [s.value for s in got] == pytest.approx(expected)
    assert all(s.explanation for s in got)


class _OwnColumns(lf.metrics.Score):
    """A Score of its own columns: a table takes them as it gives them."""

    __slots__ = ()

    def columns(self, name):
        return {f"{name}/own": self.value}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["m", "n", "a/b", "é"]), st.sampled_from([0.0, 1.0, float("nan")]),
                          st.sampled_from([None, "why"]), st.sampled_from(["plain", "extra", "error", "failed", "usage", "own"])),
                max_size=6))
def test_a_rows_score_columns_are_each_scores_columns_in_order(items):
    scores = {}
    for name, value, why, kind in items:
        if kind == "own":
            scores[name] = _OwnColumns(value, why)
            continue
        scores[name] = lf.metrics.Score(value, why, extra={"k": 1} if kind == "extra" else {},
                                        error="boom" if kind == "error" else None, failed=kind == "failed",
                                        usage=lf.Usage(input_tokens=1, output_tokens=2) if kind == "usage" else None)
    expected = {}
    for name, score in scores.items():
        expected.update(score.columns(name))
    got = base.score_columns(scores)
    assert list(got) == list(expected)
    assert all(got[k] is expected[k] or got[k] == expected[k] for k in got)
