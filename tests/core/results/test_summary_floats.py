"""floats: a column of scores as a float array, whatever the column holds."""

import math

import numpy as np
import pandas as pd
import pytest

from levelfield._core.results.summary import floats


@pytest.mark.parametrize("values", [
    [0.5, 1.0, float("nan"), -0.0, math.inf, 1e-300],  # floats only: read without pandas
    [0.5, None, 1, True, "2.5", "x", float("nan")],     # anything else: as pandas reads it
    [],
])
def test_floats_are_what_pandas_makes_of_the_column(values):
    expected = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)
    got = floats(values)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    assert list(np.signbit(got)) == list(np.signbit(expected))
