"""The maximum one-to-one assignment of tool calls: the pure-Python Hopcroft-Karp chooses the same
pairs as SciPy's ``maximum_bipartite_matching`` (the oracle, and what large grids still use)."""

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

import levelfield as lf
from levelfield._core.score import matching
from levelfield._core.score.matching import _maximum_matching, align


@st.composite
def grids(draw, max_side=12):
    rows = draw(st.integers(1, max_side))
    columns = draw(st.integers(1, max_side))
    density = draw(st.sampled_from([0.1, 0.3, 0.5, 0.8]))
    cells = draw(st.lists(st.floats(0, 1), min_size=rows * columns, max_size=rows * columns))
    return [[cells[i * columns + j] < density for j in range(columns)] for i in range(rows)]


def scipy_matching(grid):
    return maximum_bipartite_matching(csr_matrix(np.array(grid, dtype=bool)), perm_type="column").tolist()


@settings(max_examples=400, deadline=None)
@given(grids())
def test_python_matching_equals_scipy_on_random_bipartite_graphs(grid):
    assert _maximum_matching(grid) == scipy_matching(grid)


def test_python_matching_equals_scipy_on_larger_random_graphs():
    rng = np.random.default_rng(46)
    for _ in range(60):
        rows, columns = rng.integers(1, 60, size=2)
        grid = (rng.random((rows, columns)) < rng.choice([0.02, 0.05, 0.2, 0.6])).tolist()
        assert _maximum_matching(grid) == scipy_matching(grid)


def test_python_matching_is_maximum_where_greedy_is_not():
    # Greedy takes (0, 0) and leaves row 1 without a column; the maximum matching has two pairs.
    assert _maximum_matching([[True, True], [True, False]]) == [1, 0]


# A relation that is not an equivalence (subset arguments), so align takes the general path.
SUBSET = lf.ToolCallMatcher(args="subset")
calls = st.builds(lambda name, args: lf.ToolCall(tool_name=name, tool_input=args), st.sampled_from(["a", "b"]),
                  st.dictionaries(st.sampled_from(["k", "m"]), st.integers(0, 1), max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.lists(calls, max_size=8), st.lists(calls, max_size=8))
def test_align_gives_the_same_pairs_below_and_above_the_size_where_scipy_takes_over(predicted, reference):
    small = align(predicted, reference, SUBSET, pairs=True)
    saved = matching._SMALL
    matching._SMALL = 0
    try:
        large = align(predicted, reference, SUBSET, pairs=True)
    finally:
        matching._SMALL = saved
    assert small == large


def test_aligning_a_small_trajectory_imports_no_scipy():
    code = ("import sys, levelfield as lf\n"
            "from levelfield._core.score.matching import align\n"
            "m = lf.ToolCallMatcher(args='subset')\n"
            "p = [lf.ToolCall(tool_name='a', tool_input={'k': 1, 'm': 1}), lf.ToolCall(tool_name='a', tool_input={'k': 1})]\n"
            "r = [lf.ToolCall(tool_name='a', tool_input={'k': 1}), lf.ToolCall(tool_name='a', tool_input={'k': 1, 'm': 1})]\n"
            "assert align(p, r, m).matched == 2\n"
            "print(sorted({n.split('.')[0] for n in sys.modules} & {'scipy', 'numpy', 'pandas'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _pairs_are_a_matching(grid, assignment):
    columns = [j for j in assignment if j >= 0]
    return len(columns) == len(set(columns)) and all(grid[i][j] for i, j in enumerate(assignment) if j >= 0)


def test_python_matching_has_the_size_of_scipys_optimal_assignment():
    # A second oracle, of another algorithm: the 0/1 assignment problem solved by linear_sum_assignment
    # (maximize the matched cells) has the size of a maximum matching.
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(4646)
    for _ in range(300):
        rows, columns = rng.integers(1, 25, size=2)
        grid = (rng.random((rows, columns)) < rng.choice([0.05, 0.15, 0.3, 0.6, 0.9])).tolist()
        weights = np.array(grid, dtype=float)
        r, c = linear_sum_assignment(weights, maximize=True)
        ours = _maximum_matching(grid)
        assert _pairs_are_a_matching(grid, ours)
        assert sum(j >= 0 for j in ours) == int(weights[r, c].sum()), grid
