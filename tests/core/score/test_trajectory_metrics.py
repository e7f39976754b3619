"""Every trajectory metric on hand-worked cases (DESIGN.md's table), through the public metric classes."""

import math

import pytest

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext


def call(name, **args):
    return lf.ToolCall(tool_name=name, tool_input=args)


OFF = {"status": "OFF"}
PREFS = call("get_user_preferences", user_id="user_y")
SET_23 = call("set_temperature", location="Living Room", temperature=23)
A, B, X = call("a", k=1), call("b", k=2), call("x")

NAMES = ["exact", "in_order", "any_order", "precision", "recall"]
METRICS = [
    lf.metrics.TrajectoryExactMatch(),
    lf.metrics.TrajectoryInOrderMatch(),
    lf.metrics.TrajectoryAnyOrderMatch(),
    lf.metrics.TrajectoryPrecision(),
    lf.metrics.TrajectoryRecall(),
]


def scores(predicted, reference, metrics=METRICS):
    ctx = ScoringContext(case_id="c", prompt="p", response="r", predicted_trajectory=predicted,
                         reference_trajectory=reference)
    # Trajectory metrics return a Score (value and explanation); compare values.
    return [getattr(s, "value", s) for s in (m.score(ctx) for m in metrics)]


TABLE = [
    # id, predicted, reference, (exact, in_order, any_order, precision, recall)
    ("vertex_doc_device_2_off",
     [call("set_device_info", device_id="device_2", updates=OFF)],
     [call("set_device_info", device_id="device_2", updates=OFF)], (1, 1, 1, 1, 1)),
    ("vertex_doc_preferences_then_temperature", [PREFS, SET_23], [PREFS, SET_23], (1, 1, 1, 1, 1)),
    ("reordered_calls", [SET_23, PREFS], [PREFS, SET_23], (0, 0, 1, 1, 1)),
    ("extra_call_in_between", [A, X, B], [A, B], (0, 1, 1, 2 / 3, 1)),
    ("missing_call", [A], [A, B], (0, 0, 0, 1, 0.5)),
    ("repeated_predicted_call", [A, A], [A], (0, 1, 1, 0.5, 1)),
    ("repeated_reference_call_needs_two", [A], [A, A], (0, 0, 0, 1, 0.5)),
    ("repeated_calls_both_sides", [A, B, A], [A, A], (0, 1, 1, 2 / 3, 1)),
    ("parallel_calls_other_order",
     [call("get_temperature", location="Living Room"), call("get_temperature", location="Bedroom")],
     [call("get_temperature", location="Bedroom"), call("get_temperature", location="Living Room")],
     (0, 0, 1, 1, 1)),
    ("empty_predicted", [], [A], (0, 0, 0, 0, 0)),
    ("empty_reference", [A], [], (0, 1, 1, 0, 1)),
    ("both_empty", [], [], (1, 1, 1, 1, 1)),
    ("different_argument_value", [call("a", k=2)], [call("a", k=1)], (0, 0, 0, 0, 0)),
    ("different_tool_name", [call("z", k=1)], [A], (0, 0, 0, 0, 0)),
    ("argument_key_order_ignored",
     [lf.ToolCall(tool_name="a", tool_input={"x": 1, "y": 2})],
     [lf.ToolCall(tool_name="a", tool_input={"y": 2, "x": 1})], (1, 1, 1, 1, 1)),
    ("int_equals_float", [call("set_temperature", location="Bedroom", temperature=19)],
     [call("set_temperature", location="Bedroom", temperature=19.0)], (1, 1, 1, 1, 1)),
    ("nested_int_equals_float", [call("s", updates={"brightness": 40})],
     [call("s", updates={"brightness": 40.0})], (1, 1, 1, 1, 1)),
    ("bool_is_not_one", [call("s", on=True)], [call("s", on=1)], (0, 0, 0, 0, 0)),
    ("string_number_is_not_number", [call("s", level="40")], [call("s", level=40)], (0, 0, 0, 0, 0)),
    ("json_string_input_parsed", [lf.ToolCall(tool_name="a", tool_input='{"k": 1}')], [A], (1, 1, 1, 1, 1)),
    ("adk_name_args_spelling", [lf.ToolCall.model_validate({"name": "a", "args": {"k": 1}})], [A], (1, 1, 1, 1, 1)),
]


@pytest.mark.parametrize("predicted,reference,expected", [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_trajectory_metric_table(predicted, reference, expected):
    got = scores(predicted, reference)
    assert got == pytest.approx([float(e) for e in expected]), dict(zip(NAMES, got))


def test_single_tool_use_needs_no_reference():
    metric = lf.metrics.TrajectorySingleToolUse(tool_name="set_temperature")
    used = ScoringContext(case_id="c", prompt="p", response="r", predicted_trajectory=[PREFS, SET_23])
    unused = ScoringContext(case_id="c", prompt="p", response="r", predicted_trajectory=[PREFS])
    assert metric.computable(used)
    assert (metric.score(used), metric.score(unused)) == (1.0, 0.0)


def test_missing_reference_gives_nan_not_zero():
    rows = [{"prompt": "p", "response": "r", "predicted_trajectory": [{"tool_name": "a"}]}]
    result = lf.evaluate(rows, metrics=["trajectory_exact_match", "trajectory_recall",
                                        lf.metrics.TrajectorySingleToolUse(tool_name="a")])
    row = result.metrics_table.iloc[0]
    assert math.isnan(row["trajectory_exact_match/score"])
    assert math.isnan(row["trajectory_recall/score"])
    assert row["trajectory_single_tool_use/score"] == 1.0
    assert result.summary_metrics["trajectory_exact_match/nan_count"] == 1


def test_maximum_matching_beats_greedy_first_fit():
    # Under "subset", P0 fits both references but P1 fits only R0: greedy R0->P0 would strand R1.
    matcher = lf.ToolCallMatcher(args="subset")
    predicted = [call("a", x=1, y=1), call("a", x=1)]
    reference = [call("a", x=1), call("a", x=1, y=1)]
    recall = lf.metrics.TrajectoryRecall(matcher=matcher, name="r")
    any_order = lf.metrics.TrajectoryAnyOrderMatch(matcher=matcher, name="a")
    assert scores(predicted, reference, [recall, any_order]) == [1.0, 1.0]


class TestArgumentModes:
    def test_subset_allows_extra_predicted_keys(self):
        m = lf.ToolCallMatcher(args="subset")
        assert m.matches(call("a", x=1, y=2), call("a", x=1))
        assert not m.matches(call("a", x=1), call("a", x=1, y=2))

    def test_superset_allows_extra_reference_keys(self):
        m = lf.ToolCallMatcher(args="superset")
        assert m.matches(call("a", x=1), call("a", x=1, y=2))
        assert not m.matches(call("a", x=1, y=2), call("a", x=1))

    def test_exact_rejects_extra_keys_either_way(self):
        m = lf.ToolCallMatcher()
        assert not m.matches(call("a", x=1, y=2), call("a", x=1))
        assert not m.matches(call("a", x=1), call("a", x=1, y=2))

    def test_ignore_compares_names_only(self):
        m = lf.ToolCallMatcher(args="ignore")
        assert m.matches(call("a", x=1), call("a", x=2))
        assert not m.matches(call("b", x=1), call("a", x=1))

    def test_per_tool_key_list(self):
        m = lf.ToolCallMatcher(tools={"set_temperature": ["location"]})
        assert m.matches(call("set_temperature", location="Bedroom", temperature=22),
                         call("set_temperature", location="Bedroom", temperature=23))
        assert not m.matches(call("set_temperature", location="Kitchen", temperature=23),
                             call("set_temperature", location="Bedroom", temperature=23))
        assert not m.matches(call("other", k=1), call("other", k=2))  # other tools stay exact

    def test_per_tool_callable(self):
        m = lf.ToolCallMatcher(tools={"search": lambda p, r: r["q"].lower() in p["q"].lower()})
        assert m.matches(call("search", q="Weather in PARIS today"), call("search", q="paris"))
        assert not m.matches(call("search", q="Rome"), call("search", q="paris"))

    def test_per_tool_mode_override(self):
        m = lf.ToolCallMatcher(tools={"log": "ignore"})
        assert m.matches(call("log", text="anything"), call("log", text="else"))

    def test_numeric_tolerance(self):
        m = lf.ToolCallMatcher(rel_tol=0.01)
        assert m.matches(call("t", v=23.1), call("t", v=23))
        assert not m.matches(call("t", v=24), call("t", v=23))
        assert not m.is_equivalence

    def test_case_and_whitespace_folding(self):
        m = lf.ToolCallMatcher(ignore_case=True, normalize_whitespace=True)
        assert m.matches(call("t", room=" living   ROOM "), call("t", room="Living Room"))
        assert m.key(call("t", room=" living   ROOM ")) == m.key(call("t", room="Living Room"))
        assert not lf.ToolCallMatcher().matches(call("t", room="living room"), call("t", room="Living Room"))

    def test_unknown_mode_is_an_error(self):
        with pytest.raises(lf.MetricError, match="args='fuzzy'"):
            lf.ToolCallMatcher(args="fuzzy")
        with pytest.raises(lf.MetricError, match=r"tools\['a'\]"):
            lf.ToolCallMatcher(tools={"a": "fuzzy"})


def test_matcher_kinds_are_equivalence_only_when_safe():
    assert lf.ToolCallMatcher().is_equivalence
    assert lf.ToolCallMatcher(args="ignore", tools={"a": ["k"]}, ignore_case=True).is_equivalence
    assert not lf.ToolCallMatcher(args="subset").is_equivalence
    assert not lf.ToolCallMatcher(tools={"a": lambda p, r: True}).is_equivalence


def test_tool_trajectory_avg_score_match_types():
    reordered = ([SET_23, PREFS], [PREFS, SET_23])
    exact = lf.metrics.ToolTrajectoryAvgScore()
    in_order = lf.metrics.ToolTrajectoryAvgScore("IN_ORDER", name="in_order")
    any_order = lf.metrics.ToolTrajectoryAvgScore("ANY_ORDER", name="any_order")
    assert scores(*reordered, [exact, in_order, any_order]) == [0.0, 0.0, 1.0]
    ignore_args = lf.metrics.ToolTrajectoryAvgScore(ignore_args=True, name="names")
    assert scores([call("a", k=9)], [call("a", k=1)], [exact, ignore_args]) == [0.0, 1.0]
