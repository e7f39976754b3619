"""ADK's judged and efficiency criteria in levelfield: from test_config.json on the command line with any judge,
by name with a judge, every rubric verdict kept, unreadable answers NaN (never a guess), bad input named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import levelfield as lf
from levelfield import JudgeAnswersUnreadableWarning
from levelfield._core.data.dataset import EvalCase, EvalDataset
from levelfield.cli.main import main
from levelfield.testing import ScriptedChatModel

FIXTURE = Path(__file__).resolve().parents[1] / "judged_fixture"
sys.path.insert(0, str(FIXTURE.parents[1]))
from tests.judged_fixture.judges import judge as fixture_judge  # noqa: E402

EVALSET = str(FIXTURE / "home_judged.evalset.json")
CONFIG = str(FIXTURE / "test_config.json")
LANGGRAPH = "samples.home_automation.agents.langgraph_agent:agent"
EVERY_CRITERION = list(json.loads(Path(CONFIG).read_text())["criteria"])


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def _case(response: str, *, reference: str = "It is 21 degrees.", rubrics=None, case_id: str = "weather") -> EvalCase:
    metadata = {"rubrics": rubrics} if rubrics is not None else {}
    return EvalCase(case_id=case_id, prompt="How warm is it in Paris?", reference=reference, response=response,
                    predicted_trajectory=[], metadata=metadata, location=f"cases.jsonl line 1 ({case_id})")


def _scores(metric, *cases):
    return lf.evaluate(EvalDataset(list(cases)), metrics=[metric], progress=False).scores


# -- the command line --------------------------------------------------------------------------------


def test_an_adk_eval_set_naming_every_criterion_runs_with_a_scripted_judge_on_the_command_line(capsys):
    code = main(["eval", EVALSET, "--agent", LANGGRAPH, "--config", CONFIG, "--judge", "tests.judged_fixture.judges:judge", "-q"])
    out = capsys.readouterr().out
    assert code == 1  # device_3_follow_up fails; the output says which criterion and why
    blocks = out.split("\n\n")
    passing = next(b for b in blocks if b.startswith("turn_off_device_2:"))
    failing = next(b for b in blocks if b.startswith("device_3_follow_up:"))
    assert passing.startswith("turn_off_device_2: PASS")
    # ADK's efficiency criteria are not in the file (ADK refuses a threshold for them): reported on every eval.
    informational = {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}
    for name in [*EVERY_CRITERION, *informational]:  # every criterion: its score, and pass/FAIL unless informational
        line = next(x for x in passing.splitlines() if x.strip().startswith(name + " "))
        assert ("(info)" in line) == (name in informational)
        assert line.split()[-1] != "FAIL" and (line.split()[-1] == "pass") == (name not in informational)
    assert "final_response_match_v2 (>= 0.8)" in failing and "0.333 FAIL" in failing
    # The langgraph agent called its model twice in the one-turn case (tool call, then the answer).
    assert next(x for x in passing.splitlines() if "inference_call_count_v1" in x).split()[-1] == "2.000"
    # Why the judge failed it, turn by turn.
    assert "final_response_match_v2, the judge said:\n    turn 1: valid: compared with the reference\n    turn 2: invalid:" in out


def test_a_judged_criterion_without_judge_on_the_command_line_says_how_to_give_one(capsys):
    code = main(["eval", EVALSET, "--agent", LANGGRAPH, "--config", CONFIG, "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "test_config.json: criterion 'final_response_match_v2' needs a judge model" in err and "--judge SPEC" in err


def test_judged_metric_names_on_the_command_line_use_the_judge(capsys, tmp_path):
    code = main(["eval", EVALSET, "--agent", LANGGRAPH, "-m", "safety_v1", "-m", "token_usage_v1",
                 "--judge", "tests.judged_fixture.judges:judge", "-q", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0 and "safety_v1" in out and "token_usage_v1" in out


# -- by name in metrics=[...] -------------------------------------------------------------------------


def test_a_judged_criterion_by_name_needs_a_judge_and_uses_the_one_given():
    with pytest.raises(lf.MetricError, match=r"lf\.metrics\.adk\.final_response_match_v2\(judge=\.\.\.\)"):
        lf.evaluate(EvalDataset([_case("It is 21 degrees.")]), metrics=["final_response_match_v2"], progress=False)
    result = lf.evaluate(EvalDataset([_case("Il fait 21 degrés.")]), metrics=["final_response_match_v2"],
                         judge=fixture_judge, progress=False)
    assert result.scores[0]["final_response_match_v2/score"] == 1.0
    assert "final_response_match_v2" in lf.metrics.metric_names()


def test_the_judge_may_be_an_a2a_agent_on_a_real_server():
    pytest.importorskip("a2a.server.request_handlers")
    from levelfield.adapters.a2a.server import start_server

    calls = []

    def judge_agent(prompt: str) -> str:
        calls.append(prompt)
        return '{"reasoning": "same temperature", "verdict": "valid"}'

    with start_server(judge_agent) as server:
        metric = lf.metrics.adk.final_response_match_v2(judge=server.url, judge_config=lf.JudgeConfig(samples=2, cache=False))
        (row,) = _scores(metric, _case("21 Grad in Paris."))
    assert row["final_response_match_v2/score"] == 1.0
    assert len(calls) == 2 and "21 Grad in Paris." in calls[0]


# -- what a judge says, kept or refused ------------------------------------------------------------------

RUBRICS = [
    {"rubric_id": "temp", "rubric_content": {"text_property": "The answer gives the temperature."}, "type": "FINAL_RESPONSE_QUALITY"},
    {"rubric_id": "unit", "rubric_content": {"text_property": "Die Antwort nennt die Einheit."}, "type": "FINAL_RESPONSE_QUALITY"},
]


def _judge(*answers: str) -> ScriptedChatModel:
    replies = list(answers)
    return ScriptedChatModel(lambda messages: replies.pop(0) if len(replies) > 1 else replies[0])


def test_every_rubric_verdict_and_its_rationale_is_kept_per_row():
    answer = ("ID: temp\nProperty: The answer gives the temperature.\nRationale: says 21 degrees\nVerdict: yes\n\n"
              "ID: unit\nProperty: Die Antwort nennt die Einheit.\nRationale: keine Einheit genannt\nVerdict: no")
    metric = lf.metrics.adk.rubric_based_final_response_quality_v1(judge=_judge(answer), judge_config=lf.JudgeConfig(samples=1, cache=False))
    (row,) = _scores(metric, _case("Es sind 21.", rubrics=RUBRICS))
    name = "rubric_based_final_response_quality_v1"
    assert row[f"{name}/score"] == 0.5
    assert row[f"{name}/rubrics"] == [
        {"id": "temp", "property": "The answer gives the temperature.", "verdict": "yes", "score": 1.0, "rationale": "says 21 degrees", "turn": 1},
        {"id": "unit", "property": "Die Antwort nennt die Einheit.", "verdict": "no", "score": 0.0, "rationale": "keine Einheit genannt", "turn": 1},
    ]
    assert "[unit] Die Antwort nennt die Einheit.: no. keine Einheit genannt" in row[f"{name}/explanation"]


def test_a_judge_that_leaves_out_a_rubric_gives_nan_with_its_answer_kept_never_a_partial_score():
    dropped = "ID: temp\nProperty: The answer gives the temperature.\nRationale: ok\nVerdict: yes"
    metric = lf.metrics.adk.rubric_based_final_response_quality_v1(judge=_judge(dropped), judge_config=lf.JudgeConfig(samples=1, cache=False))
    (row,) = _scores(metric, _case("21 degrees.", rubrics=RUBRICS))
    name = "rubric_based_final_response_quality_v1"
    assert row[f"{name}/score"] != row[f"{name}/score"]  # NaN, where ADK would score 1.0 on the rubric it got
    assert row[f"{name}/failed"] is True
    assert row[f"{name}/unparsed"] == [f"(no readable verdict for rubric(s) unit) {dropped}"]


def test_an_unreadable_label_is_a_judge_failure_with_the_raw_answer_kept():
    metric = lf.metrics.adk.final_response_match_v2(judge=_judge("Looks fine to me, mostly."), judge_config=lf.JudgeConfig(samples=3, cache=False))
    with pytest.warns(JudgeAnswersUnreadableWarning, match="final_response_match_v2"):
        (row,) = _scores(metric, _case("21 degrees."))
    assert row["final_response_match_v2/score"] != row["final_response_match_v2/score"]
    assert row["final_response_match_v2/failed"] is True
    assert "final_response_match_v2/explanation" not in row  # an unread answer explains no score
    assert row["final_response_match_v2/unreadable_answer"] == "Looks fine to me, mostly."
    assert '"verdict": "valid"' in row["final_response_match_v2/error"]
    assert row["final_response_match_v2/unparsed"] == ["Looks fine to me, mostly."] * 3


def test_an_empty_rubric_list_is_an_error_naming_the_case_before_any_run(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "weather.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": [{
        "eval_id": "paris", "conversation": [{"user_content": {"parts": [{"text": "How warm is Paris?"}]},
                                               "final_response": {"parts": [{"text": "21 degrees"}]}}]}]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {
        "rubric_based_tool_use_quality_v1": {"threshold": 1.0, "rubrics": []}}}))
    ran = []

    def agent(prompt: str) -> str:
        ran.append(prompt)
        return "21 degrees"

    with pytest.raises(lf.MetricError, match=r"case 'paris' \(.*weather.evalset.json case 1.*\): metric 'rubric_based_tool_use_quality_v1' has no rubrics"):
        lf.testing.check_eval(str(folder), agent, judge=fixture_judge)
    assert ran == []


def test_num_samples_gives_the_judges_agreement_per_row_and_consistency_in_the_summary():
    answers = ['{"verdict": "valid"}', '{"verdict": "invalid"}', '{"verdict": "valid"}', '{"verdict": "valid"}']
    metric = lf.metrics.adk.final_response_match_v2(judge=_judge(*answers), judge_config=lf.JudgeConfig(samples=4, cache=False))
    result = lf.evaluate(EvalDataset([_case("21 degrees.")]), metrics=[metric], progress=False)
    assert result.scores[0]["final_response_match_v2/agreement"] == 0.75
    assert result.summary_metrics["final_response_match_v2/agreement/mean"] == 0.75


# -- simulated conversations ----------------------------------------------------------------------------


def test_per_turn_user_simulator_quality_judges_each_user_turn_of_a_simulated_conversation():
    from levelfield.testing import ScriptedUser

    case = EvalCase(case_id="sim", conversation_scenario={
        "starting_prompt": "Turn on device_1.", "conversation_plan": "Ask to turn on device_1, then say thanks."})

    def agent(prompt: str) -> str:
        return "Done." if "device_1" in prompt else "You're welcome."

    user = ScriptedUser([("Done", "Thanks!"), ("welcome", None)])

    def judge(prompt: str) -> str:
        # The second user turn keeps to the plan; ending after it is right.
        return json.dumps({"reasoning": "follows the plan", "is_valid": True})

    metric = lf.metrics.adk.per_turn_user_simulator_quality_v1(judge=judge, judge_config=lf.JudgeConfig(samples=1, cache=False))
    result = lf.evaluate(EvalDataset([case]), agent, metrics=[metric], simulator=user, progress=False)
    row = result.scores[0]
    assert row["per_turn_user_simulator_quality_v1/score"] == 1.0
    assert row["per_turn_user_simulator_quality_v1/per_turn"] == [1.0, 1.0]


SIMULATED = FIXTURE / "simulated"
PLAYERS = "tests.judged_fixture.simulated.players"


def test_a_config_naming_per_turn_user_simulator_quality_runs_with_a_simulator_on_the_command_line(capsys):
    code = main(["eval", str(SIMULATED / "home_simulated.evalset.json"), "--agent", f"{PLAYERS}:agent",
                 "--config", str(SIMULATED / "test_config.json"), "--judge", "tests.judged_fixture.judges:judge",
                 "--simulator", f"{PLAYERS}:user", "-q"])
    out = capsys.readouterr().out
    assert code == 1  # the German user thanked, which this fixture's judge finds off the plan
    table = out.split("\n\n")[1].splitlines()
    assert table[1].split()[:3] == ["licht_an", "0.500", "FAIL"]
    assert table[2].split()[:3] == ["状态查询", "1.000", "pass"]
    # The Chinese case id takes two columns a character: the columns still line up.
    assert table[1].index("0.500") == table[2].index("1.000") + len("状态查询")
    # The failure shows the judge's reason for the user turn it judged, and the conversation as it went.
    assert "user turn 2: off plan: thanks are off the plan" in out and "the ending: on plan" in out
    assert "turn 2 user:  'Danke!'" in out and "agent: 'Gern geschehen.'" in out and "ended: finished" in out


def test_check_eval_plays_scenario_cases_with_a_simulator_and_without_one_says_they_need_it():
    from tests.judged_fixture.simulated.players import agent, user

    evalset, config = SIMULATED / "home_simulated.evalset.json", SIMULATED / "test_config.json"
    played = lf.testing.check_eval(evalset, agent, criteria=config, judge=fixture_judge, simulator=user)
    assert {v.case_id: v.passed for v in played.verdicts} == {"licht_an": False, "状态查询": True}
    assert played.skipped == {}
    with pytest.warns(UserWarning, match="skipped 2 conversation_scenario case"), \
            pytest.raises(lf.DatasetError, match="every case is a conversation_scenario; they need a user simulator"):
        lf.testing.check_eval(evalset, agent, criteria=config, judge=fixture_judge)


@pytest.mark.parametrize(("extra", "said"), [
    (["--simulator", "tests.judged_fixture.simulated.players:agent"],
     "is neither a user simulator (lf.UserSimulator, lf.testing.ScriptedUser) nor a LangChain chat model"),
    (["--simulator", f"{PLAYERS}:user", "--max-turns", "3"], "is a simulator object; set its max_turns where it is made"),
    (["--simulator", "tests.judged_fixture.simulated.players:nobody"], "has no attribute 'nobody'"),
])
def test_a_simulator_spec_that_cannot_play_the_user_is_a_usage_error(capsys, extra, said):
    code = main(["eval", str(SIMULATED / "home_simulated.evalset.json"), "--agent", f"{PLAYERS}:agent",
                 "--config", str(SIMULATED / "test_config.json"), "--judge", "tests.judged_fixture.judges:judge", *extra, "-q"])
    assert code == 2 and said in capsys.readouterr().err


# -- the report -----------------------------------------------------------------------------------------


def test_the_reports_case_drill_down_shows_every_rubric_verdict_and_rationale(tmp_path):
    answer = ("ID: temp\nProperty: The answer gives the temperature.\nRationale: nennt 21 Grad\nVerdict: yes\n\n"
              "ID: unit\nProperty: Die Antwort nennt die Einheit.\nRationale: <keine> Einheit\nVerdict: no")
    metric = lf.metrics.adk.rubric_based_final_response_quality_v1(judge=_judge(answer), judge_config=lf.JudgeConfig(samples=1, cache=False))
    data = EvalDataset([EvalCase(case_id="paris", prompt="How warm is Paris?", metadata={"rubrics": RUBRICS})])
    cmp = lf.compare(data, {"a": lambda p: "21", "b": lambda p: "21 Grad"}, metrics=[metric], progress=False)
    view = cmp.case_view("paris").runs["a"][0].judged["rubric_based_final_response_quality_v1"]
    assert [(v["id"], v["verdict"]) for v in view.verdicts] == [("temp", "yes"), ("unit", "no")]
    html = lf.report.write(cmp, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "the judge&#x27;s reasons" in html or "the judge's reasons" in html
    assert "Die Antwort nennt die Einheit." in html and "nennt 21 Grad" in html
    assert "&lt;keine&gt; Einheit" in html and "<keine>" not in html  # the judge's text is escaped
