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


def run_lines(path):
    return [r for r in read_jsonl(path) if r.get("kind", "run") == "run"]


def test_eval_result_jsonl_holds_odd_agent_data_in_its_documented_text_forms(tmp_path):
    result = lf.evaluate(CASES, odd_agent, metrics=["exact_match"], progress=False)
    [record] = read_jsonl(result.to_jsonl(tmp_path / "runs.jsonl"))
    call = record["output"]["trajectory"][0]
    assert call["tool_input"] == {"when": "2024-05-06", "tags": ["a", "b"], "score": None, "ids": {"1": "x"},
                                  "amount": "1.10"}
    output = call["tool_output"]
    assert output["gadget"] == "Gadget(42)" and output["raw"] == "base64://4=" and output["limit"] is None
    assert output["loop"][0] == "北京" and "<cycle: list>" in json.dumps(output["loop"])


def test_eval_result_csv_holds_odd_agent_data(tmp_path):
    result = lf.evaluate(CASES, odd_agent, metrics=["exact_match"], progress=False)
    text = result.to_csv(tmp_path / "table.csv").read_text(encoding="utf-8")
    assert "Gadget(42)" in text and "答え" in text


def test_comparison_save_and_load_survive_odd_agent_data(tmp_path):
    cmp = lf.compare(CASES, {"odd": odd_agent, "plain": lambda p: "答え"}, metrics=["exact_match"], progress=False)
    paths = lf.report.save(cmp, tmp_path / "out")
    assert [r["agent"] for r in run_lines(paths["runs"])] == ["odd", "plain"]
    assert "2024-05-06" in paths["report"].read_text(encoding="utf-8")  # the call's arguments, shown
    back = lf.Comparison.load(tmp_path / "out")
    assert back.results["odd"].runs[0].output.trajectory[0].tool_input["tags"] == ["a", "b"]
    assert back.summary.loc["odd", "exact_match/mean"] == pytest.approx(1.0)


def test_an_evaluation_with_out_saves_odd_agent_data_as_it_goes(tmp_path):
    lf.evaluate(CASES, odd_agent, metrics=["exact_match"], progress=False, out=tmp_path / "out")
    [line] = run_lines(tmp_path / "out" / "runs.jsonl")
    assert line["run"]["output"]["trajectory"][0]["tool_output"]["gadget"] == "Gadget(42)"
