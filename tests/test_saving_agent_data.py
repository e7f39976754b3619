"""Saving results never fails on what an agent returned: runs.jsonl, the CSV table and the report."""

import datetime as dt
import json
from decimal import Decimal

import pytest

import levelfield as lf

CASES = [{"case_id": "c1", "prompt": "Wie spät ist es?", "reference": "答え"}]


class Gadget:
    def __repr__(self):
        return "Gadget(42)"


def odd_agent(prompt):
    loop = ["北京"]
    loop.append(loop)
    return lf.AgentOutput(
        response="答え",
        trajectory=[lf.ToolCall(
            tool_name="lookup",
            tool_input={"when": dt.date(2024, 5, 6), "tags": {"b", "a"}, "score": float("nan"), "ids": {1: "x"},
                        "amount": Decimal("1.10")},
            tool_output={"gadget": Gadget(), "raw": b"\xff\xfe", "loop": loop, "limit": float("inf")},
        )],
    )


def read_jsonl(path):
    # parse_constant rejects NaN/Infinity: the file must be standard JSON.
    def reject(token):
        raise AssertionError(f"non-standard JSON token {token}")

    return [json.loads(line, parse_constant=reject) for line in path.read_text(encoding="utf-8").splitlines()]


def test_eval_result_jsonl_holds_odd_agent_data_in_its_documented_text_forms(tmp_path):
    result = lf.evaluate(CASES, odd_agent, metrics=["exact_match"], progress=False)
    [record] = read_jsonl(result.to_jsonl(tmp_path / "runs.jsonl"))
    call = record["output"]["trajectory"][0]
    assert call["tool_input"] == {"when": "2024-05-06", "tags": ["a", "b"], "score": "NaN", "ids": {"1": "x"},
                                  "amount": "1.10"}
    assert call["tool_output"] == {"gadget": "Gadget(42)", "raw": "base64://4=", "loop": ["北京", "<cycle: list>"],
                                   "limit": "Infinity"}
    assert record["scores"] == {"exact_match/score": 1.0}


def test_eval_result_csv_holds_odd_agent_data(tmp_path):
    result = lf.evaluate(CASES, odd_agent, metrics=["exact_match"], progress=False)
    text = result.to_csv(tmp_path / "table.csv").read_text(encoding="utf-8")
    assert "Gadget(42)" in text and "答え" in text


def test_comparison_save_and_load_survive_odd_agent_data(tmp_path):
    cmp = lf.compare(CASES, {"odd": odd_agent, "plain": lambda p: "答え"}, metrics=["exact_match"], progress=False)
    paths = cmp.save(tmp_path / "out")
    records = read_jsonl(paths["runs"])
    assert [r["agent_name"] for r in records] == ["odd", "plain"]
    assert "2024-05-06" in paths["report"].read_text(encoding="utf-8")  # the call's arguments, shown
    back = lf.Comparison.load(tmp_path / "out")
    assert back.results["odd"].runs[0].output.trajectory[0].tool_input["tags"] == ["a", "b"]
    assert back.summary.loc["odd", "exact_match/mean"] == pytest.approx(1.0)


def test_a_failed_run_with_unknown_latency_is_saved_as_null_and_read_back(tmp_path):
    def broken(prompt):
        raise RuntimeError("kaputt")

    cmp = lf.compare(CASES, {"broken": broken}, metrics=["exact_match"], progress=False)
    run = cmp.results["broken"].runs[0].model_copy(update={"latency_in_seconds": float("nan")})
    cmp.results["broken"].runs[0] = run
    paths = cmp.save(tmp_path / "out")
    [record] = read_jsonl(paths["runs"])
    assert record["latency_in_seconds"] is None and record["scores"] == {"exact_match/score": None}
    back = lf.Comparison.load(tmp_path / "out")
    assert back.results["broken"].runs[0].error == "RuntimeError: kaputt"
