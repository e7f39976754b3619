"""Said aloud: a metric whose reference is missing, an agent that never calls a tool, a resume whose
references or metrics changed."""

import json
import sys
import warnings

import pytest

import levelfield as lf
from levelfield._core.run.notices import MissingReferenceWarning, NoToolCallsWarning, ResumeWarning
from levelfield.cli import main

SAMPLE = "samples/home_automation/dataset.jsonl"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
TRAJECTORY = ["trajectory_exact_match", "trajectory_recall"]


def _rows(n=3):
    with open(SAMPLE, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines][:n]


def _talker(prompt: str) -> str:
    """An agent that answers in words and never reports a tool call."""
    return "Erledigt: " + prompt


def _caught(call, category):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in seen if issubclass(w.category, category)]


# -- a metric whose reference column is missing or empty ----------------------------------------


def test_a_csv_without_reference_trajectory_warns_naming_the_metrics_and_the_column(tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text("prompt,reference\n你好,你好\nOlá,Olá\n", encoding="utf-8")
    result, said = _caught(lambda: lf.evaluate(str(path), lambda p: p, progress=False), MissingReferenceWarning)
    assert len(said) == 1
    assert "'trajectory_exact_match'" in said[0] and "'trajectory_recall'" in said[0]
    assert "column 'reference_trajectory'" in said[0] and "no case of" in said[0] and "qa.csv" in said[0]
    assert result.summary_metrics["rouge_l_sum/mean"] == 1.0  # the metrics that can score still do


def test_a_reference_missing_in_some_cases_names_how_many_and_which():
    rows = [{"case_id": "案例1", "prompt": "a", "reference": "x"}, {"case_id": "案例2", "prompt": "b"},
            {"case_id": "案例3", "prompt": "c"}]
    _, said = _caught(lambda: lf.evaluate(rows, lambda p: "x", ["exact_match"], progress=False), MissingReferenceWarning)
    assert len(said) == 1
    assert "2 of 3 cases" in said[0] and "'案例2', '案例3'" in said[0] and "'reference'" in said[0]


def test_no_warning_when_every_case_has_the_reference():
    _, said = _caught(lambda: lf.evaluate(_rows(), CAREFUL, TRAJECTORY, progress=False), MissingReferenceWarning)
    assert said == []


def test_saved_predictions_scored_batch_by_batch_warn_when_a_metric_scored_no_row(tmp_path):
    path = tmp_path / "saved.jsonl"
    path.write_text("".join(json.dumps({"prompt": "p", "reference": "r", "response": "r"}) + "\n" for _ in range(4)),
                    encoding="utf-8")
    _, said = _caught(lambda: lf.evaluate(str(path), metrics=["trajectory_recall", "exact_match"], workers=2,
                                          progress=False), MissingReferenceWarning)
    assert len(said) == 1 and "'trajectory_recall' scored none of the 4 rows" in said[0]


@pytest.fixture
def counting_agent(tmp_path, monkeypatch):
    """A spec ``counted:agent`` whose calls are appended to ``calls.txt``."""
    log = tmp_path / "calls.txt"
    (tmp_path / "counted.py").write_text(
        f"def agent(prompt):\n    with open({str(log)!r}, 'a') as log:\n        log.write('x')\n    return 'ok'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    # Each test imports its own ``counted`` (a module an earlier test imported would log to that test's file).
    sys.modules.pop("counted", None)
    yield log
    sys.modules.pop("counted", None)


def test_cli_prints_a_warning_line_for_default_metrics_and_exits_0(tmp_path, capsys, counting_agent):
    path = tmp_path / "qa.csv"
    path.write_text("prompt,reference\nGuten Tag,ok\n", encoding="utf-8")
    assert main(["eval", str(path), "--agent", "counted:agent", "-q"]) == 0
    err = capsys.readouterr().err
    assert "levelfield eval: warning: metrics 'trajectory_exact_match'" in err and "'reference_trajectory'" in err


def test_cli_refuses_a_requested_metric_that_no_case_can_score_before_any_run(tmp_path, capsys, counting_agent):
    path = tmp_path / "qa.csv"
    path.write_text("prompt,reference\nGuten Tag,ok\n", encoding="utf-8")
    code = main(["eval", str(path), "--agent", "counted:agent", "-m", "trajectory_recall", "-m", "exact_match", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "metric 'trajectory_recall' needs column 'reference_trajectory'" in err and "--metric" in err
    assert not counting_agent.exists()  # no agent ran


# -- an agent that never made a tool call ---------------------------------------------------------


def test_an_agent_returning_plain_strings_is_named_when_trajectory_metrics_are_asked():
    _, said = _caught(lambda: lf.compare(_rows(), {"talker": _talker, "careful": CAREFUL}, TRAJECTORY, progress=False),
                      NoToolCallsWarning)
    assert len(said) == 1
    assert "agent 'talker' made no tool call in any of its 3 successful runs" in said[0]
    assert "3 case(s) expect calls" in said[0] and "predicted_trajectory" in said[0]


def test_no_tool_call_warning_without_trajectory_metrics_or_when_no_call_is_expected():
    _, said = _caught(lambda: lf.evaluate(_rows(), _talker, ["rouge_l_sum"], progress=False), NoToolCallsWarning)
    assert said == []
    rows = [{**r, "reference_trajectory": []} for r in _rows()]
    _, said = _caught(lambda: lf.evaluate(rows, _talker, TRAJECTORY, progress=False), NoToolCallsWarning)
    assert said == []


def test_cli_names_the_agent_that_never_called_a_tool(capsys, counting_agent):
    assert main(["eval", SAMPLE, "--agent", "counted:agent", "-m", "trajectory_recall", "--limit", "2", "-q"]) == 0
    assert "levelfield eval: warning: agent 'agent' made no tool call" in capsys.readouterr().err


# -- resume ----------------------------------------------------------------------------------------


class _Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self, prompt):
        self.calls += 1
        return {"response": "device_2 in the Bedroom is now off.", "predicted_trajectory": []}


def test_resume_after_a_reference_changed_names_the_case_and_rescores_it_without_running_again(tmp_path):
    rows = _rows()
    agent = _Counted()
    first = lf.evaluate(rows, agent, ["exact_match"], name="a", out=tmp_path / "r", progress=False)
    assert first.metrics_table["exact_match/score"].tolist() == [1.0, 0.0, 0.0]
    changed = [dict(r) for r in rows]
    changed[1]["reference"] = "device_2 in the Bedroom is now off."
    again, said = _caught(lambda: lf.evaluate(changed, agent, ["exact_match"], name="a", out=tmp_path / "r",
                                              resume=True, progress=False), ResumeWarning)
    assert agent.calls == 3  # nothing ran again
    assert len(said) == 1 and f"'{rows[1]['case_id']}' (reference)" in said[0] and "1 case(s)" in said[0]
    assert again.metrics_table["exact_match/score"].tolist() == [1.0, 1.0, 0.0]
    assert lf.EvalResult.load(tmp_path / "r").dataset[1].reference == changed[1]["reference"]


def test_resume_with_other_metrics_says_which_were_added_and_removed(tmp_path):
    rows = _rows()
    lf.evaluate(rows, CAREFUL, ["exact_match", "bleu"], out=tmp_path / "r", progress=False)
    _, said = _caught(lambda: lf.evaluate(rows, CAREFUL, ["exact_match", "rouge_l"], out=tmp_path / "r",
                                          resume=True, progress=False), ResumeWarning)
    assert len(said) == 1 and "added 'rouge_l'" in said[0] and "removed 'bleu'" in said[0]


def test_resume_with_the_same_inputs_says_nothing(tmp_path):
    rows = _rows()
    lf.evaluate(rows, CAREFUL, TRAJECTORY, out=tmp_path / "r", progress=False)
    _, said = _caught(lambda: lf.evaluate(rows, CAREFUL, TRAJECTORY, out=tmp_path / "r", resume=True, progress=False),
                      ResumeWarning)
    assert said == []
