"""to_jsonable: anything an agent returns becomes faithful JSON-safe data, and it never raises."""

import dataclasses
import datetime as dt
import enum
import json
import math
import uuid
from decimal import Decimal
from pathlib import PurePosixPath

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from levelfield._core.data.jsonsafe import MAX_DEPTH, to_jsonable


def dumps(value):
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


# -- properties ---------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: float
    label: object = None


class Model(BaseModel):
    name: str = "m"
    payload: object = None


class Opaque:
    def __repr__(self):
        return "Opaque()"


class HostileRepr:
    def __repr__(self):
        raise RuntimeError("no repr for you")


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(max_size=20),
    st.datetimes(),
    st.dates(),
    st.timedeltas(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.uuids(),
    st.builds(Opaque),
    st.builds(HostileRepr),  # built, not sampled: hypothesis would repr a sampled one
    st.sampled_from([Color.RED, np.float64("nan"), np.int64(7), np.bool_(False), pd.NA]),
)
keys = st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=True),
                 st.tuples(st.integers(), st.text(max_size=3)))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.frozensets(st.integers() | st.text(max_size=4), max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.builds(Point, st.floats(allow_nan=True), children),
        st.builds(Model, payload=children),
    ),
    max_leaves=25,
)

JSON_NATIVE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(values)
def test_any_value_becomes_standard_json(value):
    dumps(to_jsonable(value))  # allow_nan=False: no NaN/inf, only JSON types, string keys


@settings(max_examples=100, deadline=None)
@given(values)
def test_converting_twice_changes_nothing(value):
    once = to_jsonable(value)
    assert to_jsonable(once) == once


@settings(max_examples=100, deadline=None)
@given(JSON_NATIVE)
def test_json_data_is_kept_exactly(value):
    converted = to_jsonable(value)
    assert converted == value
    assert json.loads(dumps(converted)) == value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers() | st.text(max_size=4), max_size=8))
def test_a_set_is_written_the_same_whatever_its_iteration_order(items):
    assert to_jsonable(set(items)) == to_jsonable(set(reversed(items)))


# -- the documented rules, one by one --------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), np.float32("inf"), Decimal("NaN"),
                                   Decimal("-Infinity")])
def test_nan_and_infinities_become_null(value):
    assert to_jsonable(value) is None


def test_dates_times_and_durations_are_iso_8601_text():
    assert to_jsonable(dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)) == "2024-05-06T07:08:09+00:00"
    assert to_jsonable(dt.date(2024, 5, 6)) == "2024-05-06"
    assert to_jsonable(dt.time(7, 8)) == "07:08:00"
    assert to_jsonable(dt.timedelta(days=1, hours=2)) == "P1DT2H"
    assert to_jsonable(pd.Timestamp("2024-05-06 07:08")) == "2024-05-06T07:08:00"


def test_decimals_keep_their_exact_digits():
    assert to_jsonable(Decimal("0.1000")) == "0.1000"
    assert to_jsonable(Decimal("12345678901234567890.000000001")) == "12345678901234567890.000000001"


def test_sets_become_sorted_arrays():
    assert to_jsonable({"b", "a", "c"}) == ["a", "b", "c"]
    assert to_jsonable(frozenset({3, 1, 2})) == [1, 2, 3]


def test_bytes_are_text_when_utf8_else_base64():
    assert to_jsonable("こんにちは".encode()) == "こんにちは"
    assert to_jsonable(b"\xff\x00") == "base64:/wA="
    assert to_jsonable(bytearray(b"ok")) == "ok"


def test_numpy_and_pandas_values_become_python_values():
    assert to_jsonable(np.int64(3)) == 3 and type(to_jsonable(np.int64(3))) is int
    assert to_jsonable(np.bool_(True)) is True
    assert to_jsonable(np.array([[1.5, np.nan], [3, 4]])) == [[1.5, None], [3.0, 4.0]]
    assert to_jsonable(pd.Series([1, 2])) == [1, 2]
    assert to_jsonable(pd.NA) is None


def test_pydantic_models_and_dataclasses_become_objects_of_their_fields():
    class Hidden(BaseModel):
        shown: int = 1
        secret: object = Field(default="x", exclude=True)

    assert to_jsonable(Model(payload={1, 2})) == {"name": "m", "payload": [1, 2]}
    assert to_jsonable(Hidden()) == {"shown": 1}
    assert to_jsonable(Point(1.0, dt.date(2024, 1, 1))) == {"x": 1.0, "label": "2024-01-01"}


def test_enum_members_are_their_values():
    class Level(enum.IntEnum):
        HIGH = 3

    assert to_jsonable(Color.RED) == "red"
    assert to_jsonable(Level.HIGH) == 3 and type(to_jsonable(Level.HIGH)) is int


def test_known_scalar_types_use_pydantic_text():
    assert to_jsonable(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    assert to_jsonable(PurePosixPath("a/b")) == "a/b"


def test_non_string_keys_become_their_json_text():
    assert to_jsonable({1: "a", None: "b", (1, "x"): "d", 2.5: "e"}) == {
        "1": "a", "null": "b", '[1, "x"]': "d", "2.5": "e"
    }
    assert to_jsonable({True: "c"}) == {"true": "c"}


def test_colliding_keys_are_all_kept_with_a_suffix():
    assert to_jsonable({1: "int", "1": "str"}) == {"1": "int", "1 (2)": "str"}


def test_other_objects_are_written_as_their_repr():
    assert to_jsonable({"tool": Opaque()}) == {"tool": "Opaque()"}


def test_an_object_whose_repr_raises_is_named_by_its_type():
    assert to_jsonable([HostileRepr()]) == ["<unrepresentable HostileRepr>"]


def test_a_cycle_is_cut_and_named():
    loop: list = [1]
    loop.append(loop)
    d: dict = {"name": "根"}
    d["self"] = d
    assert to_jsonable(loop) == [1, "<cycle: list>"]
    assert to_jsonable(d) == {"name": "根", "self": "<cycle: dict>"}


def test_a_value_shared_twice_without_a_cycle_is_written_twice():
    shared = {"k": 1}
    assert to_jsonable([shared, shared]) == [{"k": 1}, {"k": 1}]


def test_nesting_deeper_than_the_limit_is_cut_not_a_recursion_error():
    deep: list = []
    cur = deep
    for _ in range(10 * MAX_DEPTH):
        cur.append([])
        cur = cur[0]
    out = to_jsonable(deep)
    dumps(out)
    depth = 0
    while isinstance(out, list):
        out, depth = out[0], depth + 1
    assert out == "<nested too deep: list>" and depth == MAX_DEPTH


def test_subclasses_of_builtins_are_written_as_their_plain_values():
    class Loud(str):
        def __str__(self):
            raise RuntimeError("never called")

    class Count(int):
        def __int__(self):
            raise RuntimeError("never called")

    assert to_jsonable(Loud("日本語")) == "日本語" and type(to_jsonable(Loud("x"))) is str
    assert to_jsonable(Count(4)) == 4 and type(to_jsonable(Count(4))) is int


def test_non_latin_text_is_kept_as_is():
    value = {"Straße": "Grüße", "中文": ["北京", "上海"], "日本語": "こんにちは", "português": "ação"}
    assert to_jsonable(value) == value


def test_a_mapping_whose_items_raise_is_marked_not_raised():
    class Broken(dict):
        def items(self):
            raise RuntimeError("broken")

    assert to_jsonable({"ok": 1, "bad": Broken(a=1)}) == {"ok": 1, "bad": "<unrepresentable Broken>"}


def test_large_integers_and_finite_floats_are_unchanged():
    assert to_jsonable(10**40) == 10**40
    assert to_jsonable(-0.0) == 0.0 and math.copysign(1, to_jsonable(-0.0)) == -1
