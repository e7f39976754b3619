"""``floats``: a column of scores as float64, the values pandas' ``to_numeric(errors="coerce")`` gives."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from levelfield._core.results.summary import floats, summarize


def _pandas(values: list) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


@pytest.mark.parametrize("values", [
    [1.0, None, 2, math.nan, 0, -3.5, math.inf],   # what metrics give: NumPy reads them directly
    [], [None], [None, None], [2**60, 1],
    [True, None, False],                            # the rest as before, through pandas
    ["1.5", None, "x"], [np.float32(0.5), 1.0], [np.int64(3), None],
])
def test_floats_are_what_pandas_reads(values: list) -> None:
    got = floats(values)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, _pandas(values))


def test_a_summary_of_scores_with_none_counts_them_as_nan() -> None:
    summary = summarize({"m/score": [1.0, None, 0, None]}, ["m"])
    assert summary["row_count"] == 4 and summary["m/nan_count"] == 2 and summary["m/mean"] == 0.5


@pytest.mark.parametrize("values", [
    [0.5, 1.0, float("nan"), -0.0, math.inf, 1e-300],  # floats only: read without pandas
    [0.5, None, 1, True, "2.5", "x", float("nan")],     # anything else: as pandas reads it
])
def test_floats_keep_the_sign_of_zero_as_pandas_does(values: list) -> None:
    got, expected = floats(values), _pandas(values)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    assert list(np.signbit(got)) == list(np.signbit(expected))
