"""Deciding whether a predicted tool call matches a reference call, and aligning trajectories.

The default matcher (same tool name, deep-equal arguments) is an equivalence relation, so each
call is reduced once to a hashable key and trajectories are compared as sequences and multisets
of keys. Matchers that are not equivalences (subset/superset arguments, numeric tolerance,
callables) fall back to a match matrix and a maximum one-to-one assignment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Union

from ..data.types import ToolCall
from ..errors import MetricError

__all__ = ["ArgsMode", "ToolRule", "ToolCallMatcher", "Alignment", "align"]

ArgsMode = Literal["exact", "ignore", "subset", "superset"]
ToolRule = Union[ArgsMode, Sequence[str], Callable[[dict, dict], bool]]  # noqa: UP007 (a runtime alias: 3.10 cannot | a Literal with a generic alias)
"""How one tool's arguments are compared: a mode, the list of keys to compare, or
``fn(predicted_input, reference_input) -> bool``."""

_MODES = ("exact", "ignore", "subset", "superset")
_MISSING = ("<missing>",)


class _Bool:
    """Keeps True and False apart from 1 and 0 in canonical keys."""

    __slots__ = ()


_TRUE = (_Bool, True)
_FALSE = (_Bool, False)


class ToolCallMatcher:
    """Decides whether a predicted call matches a reference call.

    Default: same ``tool_name`` and deep-equal ``tool_input`` (key order ignored, ``1 == 1.0``,
    JSON-object strings parsed). ``args`` sets the argument mode for every tool; ``tools``
    overrides it per tool name; ``rel_tol``/``abs_tol`` compare numbers with a tolerance;
    ``ignore_case`` and ``normalize_whitespace`` fold string values before comparing.
    """

    def __init__(
        self,
        args: ArgsMode = "exact",
        *,
        tools: Mapping[str, ToolRule] | None = None,
        rel_tol: float = 0.0,
        abs_tol: float = 0.0,
        ignore_case: bool = False,
        normalize_whitespace: bool = False,
    ) -> None:
        if args not in _MODES:
            raise MetricError(f"ToolCallMatcher args={args!r} is not one of {', '.join(_MODES)}")
        rules: dict[str, ToolRule] = {}
        for tool, rule in (tools or {}).items():
            if isinstance(rule, str):
                if rule not in _MODES:
                    raise MetricError(
                        f"ToolCallMatcher tools[{tool!r}]={rule!r} is not one of {', '.join(_MODES)}, "
                        "a list of keys, or a callable"
                    )
            elif not callable(rule):
                rule = tuple(rule)
            rules[tool] = rule
        for name, tol in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf:
                raise MetricError(f"ToolCallMatcher({name}={tol!r}): give a number of 0 or more (e.g. {name}=0.01)")
        self.args: ArgsMode = args
        self.tools = rules
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.ignore_case = ignore_case
        self.normalize_whitespace = normalize_whitespace
        every_rule = [args, *rules.values()]
        self.is_equivalence = (
            rel_tol == 0.0
            and abs_tol == 0.0
            and not any(callable(r) or r in ("subset", "superset") for r in every_rule)
        )
        self._fold = ignore_case or normalize_whitespace

    def __repr__(self) -> str:
        opts = [f"args={self.args!r}"]
        if self.tools:
            opts.append(f"tools={self.tools!r}")
        for name in ("rel_tol", "abs_tol"):
            if getattr(self, name):
                opts.append(f"{name}={getattr(self, name)}")
        for name in ("ignore_case", "normalize_whitespace"):
            if getattr(self, name):
                opts.append(f"{name}=True")
        return f"ToolCallMatcher({', '.join(opts)})"

    # -- canonical keys (equivalence matchers only) ---------------------------------------

    def _fold_str(self, s: str) -> str:
        if self.normalize_whitespace:
            s = " ".join(s.split())
        if self.ignore_case:
            s = s.casefold()
        return s

    def _canon(self, value: Any) -> Hashable:
        t = type(value)
        if t is str:
            return self._fold_str(value) if self._fold else value
        if t is int or t is float or value is None:
            return value
        if t is dict:
            return frozenset([(k, self._canon(v)) for k, v in value.items()])
        if t is list or t is tuple:
            return tuple([self._canon(v) for v in value])
        if t is bool:
            return _TRUE if value else _FALSE
        if isinstance(value, Mapping):
            return frozenset([(k, self._canon(v)) for k, v in value.items()])
        if isinstance(value, str):
            return self._canon(str(value))
        if isinstance(value, (list, tuple)):
            return tuple([self._canon(v) for v in value])
        try:
            hash(value)
            return value
        except TypeError:
            return repr(value)

    def key(self, call: ToolCall) -> Hashable:
        """A hashable key such that two calls match iff their keys are equal.

        Only defined for equivalence matchers (``is_equivalence``)."""
        rule = self.tools.get(call.tool_name, self.args) if self.tools else self.args
        try:
            if rule == "exact":
                return (call.tool_name, self._canon(call.tool_input))
            if rule == "ignore":
                return (call.tool_name,)
            if isinstance(rule, tuple):
                args = call.tool_input
                return (call.tool_name, tuple(self._canon(args.get(k, _MISSING)) for k in rule))
        except RecursionError:
            # Arguments that contain themselves equal no other call's; they must not crash scoring.
            return (call.tool_name, "<arguments that contain themselves>", id(call))
        raise TypeError(f"{self!r} is not an equivalence; use matches()")

    # -- pairwise decision (any matcher) --------------------------------------------------

    def _equal(self, a: Any, b: Any) -> bool:
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if self.rel_tol or self.abs_tol:
                return math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
            return a == b
        if isinstance(a, str) and isinstance(b, str):
            return self._fold_str(a) == self._fold_str(b) if self._fold else a == b
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return a.keys() == b.keys() and all(self._equal(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(self._equal(x, y) for x, y in zip(a, b))
        return a == b

    def matches(self, predicted: ToolCall, reference: ToolCall) -> bool:
        """True if ``predicted`` counts as a match for ``reference``."""
        if predicted.tool_name != reference.tool_name:
            return False
        rule = self.tools.get(reference.tool_name, self.args)
        p, r = predicted.tool_input, reference.tool_input
        if callable(rule):
            return bool(rule(p, r))
        if rule == "ignore":
            return True
        if rule == "exact":
            return self._equal(p, r)
        if rule == "subset":
            return all(k in p and self._equal(p[k], v) for k, v in r.items())
        if rule == "superset":
            return all(k in r and self._equal(v, r[k]) for k, v in p.items())
        return all(self._equal(p.get(k, _MISSING), r.get(k, _MISSING)) for k in rule)


DEFAULT_MATCHER = ToolCallMatcher()


class Alignment(NamedTuple):
    """How a predicted trajectory lines up with a reference one, under one matcher.

    A named tuple, not a dataclass: one is made per row and matcher, and a tuple is made in C."""

    n_predicted: int
    n_reference: int
    matched: int
    """Size of a maximum one-to-one matching between predicted and reference calls."""
    exact: bool
    """Same length and every position matches."""
    in_order: bool
    """The reference is a subsequence of the prediction."""
    matched_pairs: tuple[tuple[int, int], ...] | None = None
    """(predicted index, reference index) of each matched pair, when asked for."""

    @property
    def any_order(self) -> bool:
        return self.matched == self.n_reference


def _align_keys(pk: Sequence[Hashable], rk: Sequence[Hashable], pairs: bool = False) -> Alignment:
    """The alignment of two trajectories given as their calls' match keys (equal keys: calls that match)."""
    n = len(rk)
    if pk == rk:  # the common case of a perfect trajectory: every call matches its own position
        return Alignment(n, n, n, True, True, tuple(zip(range(n), range(n))) if pairs else None)
    it = iter(pk)
    in_order = all(k in it for k in rk)
    if pairs:
        # The same multiset matching as below, keeping which predicted call each reference call
        # took (the earliest free one with its key), in one pass.
        free: dict[Hashable, list[int]] = {}
        for i, k in enumerate(pk):
            slot = free.get(k)
            if slot is None:
                free[k] = [i]
            else:
                slot.append(i)
        matched_pairs = []
        for j, k in enumerate(rk):
            slot = free.get(k)
            if slot:
                matched_pairs.append((slot.pop(0), j))
        matched_pairs.sort()
        return Alignment(len(pk), len(rk), len(matched_pairs), pk == rk, in_order, tuple(matched_pairs))
    counts: dict[Hashable, int] = {}
    for k in pk:
        counts[k] = counts.get(k, 0) + 1
    matched = 0
    for k in rk:
        c = counts.get(k, 0)
        if c:
            counts[k] = c - 1
            matched += 1
    return Alignment(len(pk), len(rk), matched, pk == rk, in_order)


def _align_general(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], matcher: ToolCallMatcher, pairs: bool
) -> Alignment:
    n, m = len(predicted), len(reference)
    grid = [[matcher.matches(p, r) for r in reference] for p in predicted]
    exact = n == m and all(grid[i][i] for i in range(n))
    # Greedy earliest match is optimal for a subsequence test, whatever the predicate.
    i = 0
    in_order = True
    for j in range(m):
        while i < n and not grid[i][j]:
            i += 1
        if i == n:
            in_order = False
            break
        i += 1
    if n == 0 or m == 0:
        return Alignment(n, m, 0, exact, in_order, () if pairs else None)
    # A greedy matching that reaches the trivial upper bound is maximum; only otherwise pay
    # for the general assignment.
    bound = min(sum(map(any, grid)), sum(any(grid[i][j] for i in range(n)) for j in range(m)))
    taken: set[int] = set()
    greedy = []
    for j in range(m):
        for i in range(n):
            if grid[i][j] and i not in taken:
                taken.add(i)
                greedy.append((i, j))
                break
    if len(greedy) == bound:
        return Alignment(n, m, bound, exact, in_order, tuple(sorted(greedy)) if pairs else None)
    assignment = _maximum_matching(grid) if n * m <= _SMALL else _maximum_matching_scipy(grid)
    matched_pairs = tuple((int(pi), int(rj)) for pi, rj in enumerate(assignment) if rj >= 0)
    return Alignment(n, m, len(matched_pairs), exact, in_order, matched_pairs if pairs else None)


# Up to this many cells (a 100 x 100 grid) the matching runs in Python in about the time building
# the grid took; beyond it, SciPy's compiled Hopcroft-Karp (and SciPy's import) pays for itself.
_SMALL = 10_000


def _maximum_matching(grid: list[list[bool]]) -> list[int]:
    """A maximum one-to-one matching of rows to columns of a match grid (Hopcroft-Karp): each row's
    column, or -1.

    It searches in the order SciPy's ``maximum_bipartite_matching`` does (rows and columns in
    index order, the depth-first search on a stack), so that both choose the same pairs."""
    n = len(grid)
    edges = [[j for j, hit in enumerate(row) if hit] for row in grid]
    unmatched = n  # a sentinel row: every free column is "matched" to it
    infinity = n + 2  # longer than any layered path
    column_of = [-1] * n
    row_of = [unmatched] * (len(grid[0]) if grid else 0)
    layer = [0] * (n + 1)
    parent = [0] * n
    while True:
        # Layer the rows by the length of the shortest alternating path from a free row.
        queue = []
        for v in range(n):
            layer[v] = 0 if column_of[v] < 0 else infinity
            if column_of[v] < 0:
                queue.append(v)
        layer[unmatched] = infinity
        for v in queue:  # the queue grows while it is read
            if layer[v] < layer[unmatched]:
                for u in edges[v]:
                    w = row_of[u]
                    if layer[w] == infinity:
                        layer[w] = layer[v] + 1
                        queue.append(w)
        if layer[unmatched] == infinity:
            return column_of
        # From each free row, one augmenting path along the layers, found depth first.
        for root in range(n):
            if column_of[root] >= 0:
                continue
            stack = [root]
            found = False
            while stack and not found:
                v = stack.pop()
                for u in edges[v]:
                    w = row_of[u]
                    if layer[w] != layer[v] + 1:
                        continue
                    if w == unmatched:  # flip the path back to the root
                        found = True
                        while True:
                            layer[v] = infinity  # each row on one path per phase
                            row_of[u] = v
                            column_of[v], u = u, column_of[v]
                            if v == root:
                                break
                            v = parent[v]
                        break
                    stack.append(w)
                    parent[w] = v


def _maximum_matching_scipy(grid: list[list[bool]]) -> list[int]:
    """The same matching by SciPy, for grids too large for Python."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    return maximum_bipartite_matching(csr_matrix(np.array(grid, dtype=bool)), perm_type="column").tolist()


def align(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    matcher: ToolCallMatcher | None = None,
    *,
    pairs: bool = False,
) -> Alignment:
    """Align two trajectories; ``pairs=True`` also returns which calls were matched."""
    matcher = matcher or DEFAULT_MATCHER
    if matcher.is_equivalence:
        pk = [matcher.key(c) for c in predicted]
        rk = [matcher.key(c) for c in reference]
        return _align_keys(pk, rk, pairs)
    return _align_general(predicted, reference, matcher, pairs)


align_keys = _align_keys
"""The alignment of two trajectories given as their calls' match keys (an equivalence matcher's)."""
