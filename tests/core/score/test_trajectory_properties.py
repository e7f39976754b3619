"""Invariants of the trajectory metrics, checked on generated trajectories (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

import levelfield as lf
from levelfield._core.score.matching import align

values = st.one_of(st.integers(-2, 2), st.sampled_from([0.0, 1.0, 2.5]), st.sampled_from(["x", "y"]), st.booleans())
calls = st.builds(
    lambda name, args: lf.ToolCall(tool_name=name, tool_input=args),
    st.sampled_from(["a", "b", "c"]),
    st.dictionaries(st.sampled_from(["k", "m"]), values, max_size=2),
)
trajectories = st.lists(calls, max_size=6)

# The same relation as the default matcher, but opaque (a callable), so alignment takes the
# general path: match matrix plus maximum bipartite matching.
OPAQUE = lf.ToolCallMatcher(tools={n: (lambda p, r: lf.ToolCallMatcher().matches(
    lf.ToolCall(tool_name="t", tool_input=p), lf.ToolCall(tool_name="t", tool_input=r))) for n in "abc"})


@settings(max_examples=150, deadline=None)
@given(trajectories, trajectories)
def test_exact_implies_in_order_implies_any_order(predicted, reference):
    a = align(predicted, reference)
    assert not a.exact or a.in_order
    assert not a.in_order or a.any_order


@settings(max_examples=150, deadline=None)
@given(trajectories, trajectories)
def test_any_order_iff_recall_is_one(predicted, reference):
    a = align(predicted, reference)
    recall = 1.0 if a.n_reference == 0 else a.matched / a.n_reference
    assert a.any_order == (recall == 1.0)


@settings(max_examples=150, deadline=None)
@given(trajectories, trajectories)
def test_scores_are_in_unit_interval(predicted, reference):
    ctx = lf.metrics.ScoringContext(case_id="c", prompt="p", response="r",
                                    predicted_trajectory=predicted, reference_trajectory=reference)
    for name in ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
                 "trajectory_precision", "trajectory_recall"]:
        (metric,) = lf.metrics.resolve_metrics([name])
        assert 0.0 <= metric.score(ctx).value <= 1.0


@settings(max_examples=150, deadline=None)
@given(trajectories, trajectories)
def test_key_path_agrees_with_general_matching(predicted, reference):
    fast = align(predicted, reference)
    general = align(predicted, reference, OPAQUE)
    assert not OPAQUE.is_equivalence
    assert (fast.exact, fast.in_order, fast.matched) == (general.exact, general.in_order, general.matched)


@settings(max_examples=100, deadline=None)
@given(trajectories)
def test_a_trajectory_matches_itself_exactly(trajectory):
    a = align(trajectory, list(trajectory))
    assert a.exact and a.matched == len(trajectory)


@settings(max_examples=100, deadline=None)
@given(trajectories, st.randoms())
def test_any_order_ignores_permutation(trajectory, rnd):
    shuffled = list(trajectory)
    rnd.shuffle(shuffled)
    assert align(shuffled, trajectory).any_order


class _Renamed(lf.metrics.TrajectoryExactMatch):
    """A subclass: its explanation is its own ``score``'s, never taken from the counts."""

    def score_calls(self, ctx):
        return lf.metrics.Score(super().score_calls(ctx).value, "said by the subclass")


TABLE_METRICS = [lf.metrics.TrajectoryExactMatch(), lf.metrics.TrajectoryInOrderMatch(),
                 lf.metrics.TrajectoryAnyOrderMatch(), lf.metrics.TrajectoryPrecision(),
                 lf.metrics.TrajectoryRecall(), lf.metrics.TrajectoryRecall(matcher=OPAQUE, name="opaque_recall"),
                 lf.metrics.TrajectoryPrecision(agent="a", name="precision_of_a"), _Renamed(name="renamed")]
engine_values = st.sampled_from([0.0, 1.0, 0.5, float("nan")])


@settings(max_examples=150, deadline=None)
@given(trajectories, st.one_of(st.none(), trajectories), st.booleans(), st.lists(engine_values, min_size=8, max_size=8))
def test_a_table_explains_each_run_as_the_metrics_own_score_does(predicted, reference, failed, values):
    """The explanations a table gives (the counts alone where they say why, without matching the
    calls again) are the Scores each metric's own ``score`` gives, number kept from the engine."""
    from levelfield._core.data.dataset import EvalCase
    from levelfield._core.score.scoring import RunExplainer, context_for, explain_scores

    case = EvalCase(case_id="c", prompt="p", reference_trajectory=reference)
    run = lf.AgentRun(case_id="c", agent_name="agent", trial=0, failure=failed, latency_in_seconds=0.1,
                      output=None if failed else lf.AgentOutput(response="r", trajectory=predicted))
    scores = {m.name: lf.metrics.Score(v) for m, v in zip(TABLE_METRICS, values)}
    scores["opaque_recall"] = lf.metrics.Score(values[5], "already said")  # an explanation is kept as it is
    explainer = RunExplainer(TABLE_METRICS)
    for _ in range(2):  # the second time with every call's key known
        got = explainer(case, run, scores)
        assert got == explain_scores(context_for(case, run), TABLE_METRICS, scores)
        assert list(got) == list(scores)


odd_values = st.one_of(values, st.sampled_from([None, float("nan"), "X", " x  y", [1, "x"], {"k": [True, 1]}]))
odd_calls = st.builds(
    lambda name, args: lf.ToolCall(tool_name=name, tool_input=args),
    st.sampled_from(["a", "b", "c"]),
    st.dictionaries(st.sampled_from(["k", "m"]), odd_values, max_size=2),
)
FOLDING = lf.ToolCallMatcher(ignore_case=True, normalize_whitespace=True)
SAME_TEXT_METRICS = [lf.metrics.TrajectoryExactMatch(), lf.metrics.TrajectoryInOrderMatch(),
                     lf.metrics.TrajectoryPrecision(), lf.metrics.TrajectoryRecall(matcher=FOLDING, name="folded_recall"),
                     lf.metrics.TrajectoryExactMatch(matcher=FOLDING, name="folded_exact")]
OTHERS = [_Renamed(name="renamed"), lf.metrics.TrajectoryRecall(matcher=OPAQUE, name="opaque_recall"),
          lf.metrics.TrajectoryPrecision(agent="a", name="precision_of_a")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(odd_calls, max_size=4), st.sampled_from(["copy", "swap", "other", "case", "failed"]),
                          st.lists(odd_calls, max_size=4), st.sampled_from(["none", "said", "nan", "failed"])),
                min_size=1, max_size=40), st.booleans())
def test_a_table_of_many_runs_explains_calls_written_like_the_reference_as_their_own_score_does(runs, others):
    """Runs whose calls are the reference's (new objects, written alike), swapped, cased otherwise,
    others or none (a failed run), NaN and None among the arguments, Scores already said, NaN or
    failed; metrics whose texts come from the counts, with (``others``) or without ones whose texts
    do not: one explainer for all of them (as a table has), run by run or all at once, gives what
    each metric's own ``score`` gives each run."""
    from levelfield._core.data.dataset import EvalCase
    from levelfield._core.score.scoring import RunExplainer, context_for, explain_scores

    metrics = SAME_TEXT_METRICS + (OTHERS if others else [])
    explainer = RunExplainer(metrics)
    table, expected = [], []
    for i, (reference, how, other, engine) in enumerate(runs):
        predicted = [lf.ToolCall(tool_name=c.tool_name, tool_input=dict(c.tool_input)) for c in reference]
        if how == "swap":
            predicted.reverse()
        elif how == "other":
            predicted = other
        elif how == "case":
            predicted = [lf.ToolCall(tool_name=c.tool_name, tool_input={k: v.upper() if isinstance(v, str) else v
                                                                          for k, v in c.tool_input.items()})
                         for c in predicted]
        case = EvalCase(case_id=f"c{i}", prompt="p", reference_trajectory=reference)
        run = lf.AgentRun(case_id=f"c{i}", agent_name="agent", trial=0, failure=how == "failed", latency_in_seconds=0.1,
                          output=None if how == "failed" else lf.AgentOutput(response="r", trajectory=predicted))
        ctx = context_for(case, run)
        scores = {m.name: lf.metrics.Score(m.score(ctx).value) for m in metrics}
        first = metrics[i % len(metrics)].name  # one Score of the row otherwise than the engine's usual
        if engine == "said":
            scores[first] = lf.metrics.Score(scores[first].value, "already said")
        elif engine == "nan":
            scores[first] = lf.metrics.Score(float("nan"))
        elif engine == "failed":
            scores[first] = lf.metrics.Score(float("nan"), failed=True, error="boom")
        expected.append(explain_scores(context_for(case, run), metrics, scores))
        assert explainer(case, run, scores) == expected[-1]
        table.append((case, run, scores))
    assert RunExplainer(metrics).many(table) == expected
    assert explainer.many(table) == expected  # with every call's key known
