"""Gating pytest on eval sets: assert_eval's verdict and message, eval_test, and the pytest plugin."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import sys
from pathlib import Path

import pytest

import levelfield as lf

pytest_plugins = ["pytester"]

FIXTURE = Path(__file__).resolve().parents[1] / "fixture"
EVALSET = FIXTURE / "home.evalset.json"
sys.path.insert(0, str(FIXTURE.parent))
from fixture.agents import careful_follow_up, hasty_follow_up  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_assert_eval_passes_the_careful_agent_on_the_fixture_folder():
    report = lf.testing.assert_eval(
        "tests/fixture/" if Path("tests/fixture").is_dir() else FIXTURE,
        careful_follow_up,
        criteria=FIXTURE / "test_config.json",
        trials=2,
    )
    assert report.passed and len(report.verdicts) == 7
    assert len(report.result.runs) == 14


def test_assert_eval_raises_listing_every_failing_case():
    with pytest.raises(AssertionError) as info:
        lf.testing.assert_eval(FIXTURE, hasty_follow_up, criteria=FIXTURE / "test_config.json")
    message = str(info.value)
    assert message.splitlines()[0] == (
        "levelfield: 3 of 7 cases failed (tool_trajectory_avg_score >= 1, response_match_score >= 0.8)"
    )
    failed = [line.split("'")[1] for line in message.splitlines() if line.startswith("FAILED case")]
    assert failed == ["warmer_room", "kitchen_all_off", "lights"]


def test_assert_eval_message_shows_expected_and_actual_trajectory_and_response():
    with pytest.raises(AssertionError) as info:
        lf.testing.assert_eval(f"{EVALSET}:kitchen_all_off", hasty_follow_up)
    message = str(info.value)
    assert "  tool_trajectory_avg_score 0.000 < 1\n  response_match_score 0.444 < 0.8" in message
    assert (
        '    expected trajectory: list_devices(room="Kitchen"); '
        'set_device_info(device_id="device_3", updates={"status": "OFF"}); '
        'set_device_info(device_id="device_4", updates={"status": "OFF"})'
    ) in message
    assert (
        '    actual trajectory:   set_device_info(device_id="device_4", updates={"status": "OFF"}); '
        'set_device_info(device_id="device_3", updates={"status": "OFF"})'
    ) in message
    assert "    expected response:   'All devices in the Kitchen are now off: device_3, device_4.'" in message
    assert "    actual response:     'Everything in the Kitchen is off.'" in message


def test_assert_eval_message_scores_each_turn_of_a_multi_turn_case():
    with pytest.raises(AssertionError) as info:
        lf.testing.assert_eval(FIXTURE / "lights.test.json", hasty_follow_up)
    message = str(info.value)
    assert "  turn 2 of 2: 'Set device_5 brightness to 40.'" in message
    assert 'actual trajectory:   set_device_info(device_id="device_5", updates={"brightness": "40"})' in message
    assert "scores: tool_trajectory_avg_score=0.000, response_match_score=1.000" in message


def test_assert_eval_reads_the_test_config_beside_the_file(tmp_path):
    shutil.copy(FIXTURE / "lights.test.json", tmp_path)
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    report = lf.testing.assert_eval(tmp_path / "lights.test.json", hasty_follow_up)
    assert [c.metric for c in report.criteria if not c.informational] == ["tool_trajectory_avg_score"]


def test_assert_eval_without_a_config_uses_adks_defaults(tmp_path):
    shutil.copy(FIXTURE / "thermostat.test.json", tmp_path)
    report = lf.testing.assert_eval(tmp_path / "thermostat.test.json", careful_follow_up)
    assert [(c.metric, c.threshold) for c in report.criteria if not c.informational] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]
    # and, as ADK 2.x, the efficiency criteria, reported without being asked
    assert [c.metric for c in report.criteria if c.informational] == [
        "tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]


def test_assert_eval_takes_an_agent_spec_string():
    report = lf.testing.assert_eval(
        FIXTURE / "thermostat.test.json", "samples.home_automation.agents.function_agents:careful_agent"
    )
    assert report.passed


def test_assert_eval_reports_an_agent_that_crashes_as_a_failed_case():
    def broken(prompt):
        raise ValueError("no model configured")

    with pytest.raises(AssertionError, match=r"trial 1 failed \(ValueError\): ValueError: no model configured"):
        lf.testing.assert_eval(FIXTURE / "thermostat.test.json", broken, retries=0)


def test_plugin_is_registered_as_a_pytest_entry_point():
    entry = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "levelfield"]
    assert [e.value for e in entry] == ["levelfield.pytest_plugin"]


@pytest.fixture
def quiet_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Only levelfield's plugin in the inner runs: other installed plugins (hypothesis) take seconds to load.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "levelfield.pytest_plugin", *args)


def _write_test_file(pytester: pytest.Pytester, agent: str, source: Path, **kw: str) -> None:
    extra = "".join(f", {k}={v}" for k, v in kw.items())
    pytester.makepyfile(
        test_home=f"""
import sys
sys.path.insert(0, {str(REPO)!r})
sys.path.insert(0, {str(FIXTURE.parent)!r})
import levelfield as lf
test_home = lf.testing.eval_test({str(source)!r}, {agent!r}{extra})
"""
    )


def test_eval_test_makes_one_passing_item_per_case(quiet_pytester):
    pytester = quiet_pytester
    _write_test_file(pytester, "fixture.agents:careful_follow_up", FIXTURE)
    result = _run(pytester, "-q")
    result.assert_outcomes(passed=7)


def test_eval_test_fails_only_the_failing_cases_with_their_details(quiet_pytester):
    pytester = quiet_pytester
    _write_test_file(pytester, "fixture.agents:hasty_follow_up", FIXTURE)
    result = _run(pytester, "-q", "-rf")
    result.assert_outcomes(passed=4, failed=3)
    result.stdout.fnmatch_lines(["*test_home?warmer_room?*", "*actual trajectory:*get_temperature(location=*"])


def test_lf_trials_option_reruns_every_case(quiet_pytester):
    pytester = quiet_pytester
    pytester.makepyfile(
        test_trials=f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from samples.home_automation.agents.function_agents import careful_agent

def test_thermostat(lf_assert_eval):
    report = lf_assert_eval({str(FIXTURE / "thermostat.test.json")!r}, careful_agent)
    assert len(report.result.runs) == 3
"""
    )
    result = _run(pytester, "-q", "--lf-trials", "3")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("trials", ["0", "-1", "x"])
def test_lf_trials_out_of_range_is_a_usage_error_naming_it(quiet_pytester, trials):
    result = _run(quiet_pytester, "-q", "--lf-trials", trials)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --lf-trials*"])


def test_lf_criteria_option_replaces_the_criteria(quiet_pytester, tmp_path):
    pytester = quiet_pytester
    config = tmp_path / "loose.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    _write_test_file(pytester, "fixture.agents:hasty_follow_up", FIXTURE / "lights.test.json")
    result = _run(pytester, "-q", "--lf-criteria", str(config))
    result.assert_outcomes(passed=1)


def test_cli_eval_with_config_prints_the_case_table_and_exits_1_on_a_failing_case(capsys):
    from levelfield.cli.main import main

    code = main(["eval", f"{EVALSET}:greeting,warmer_room", "--agent", "fixture.agents:hasty_follow_up",
                 "--config", str(FIXTURE / "test_config.json"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    gate_table, efficiency_table = out.split("\n\n")[1:3]
    assert [line.split()[-1] for line in gate_table.splitlines() if line.startswith(("greeting", "warmer_room"))] == [
        "PASS", "FAIL"]
    # The efficiency criteria follow, per turn and informational: warmer_room made two tool calls in its one turn.
    assert efficiency_table.splitlines()[0].split()[-4:] == [
        "tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]
    assert efficiency_table.splitlines()[2].split()[:2] == ["warmer_room", "2.000"]
    assert "FAILED case 'warmer_room'" in out


def test_cli_eval_with_config_exits_0_when_every_case_passes(capsys):
    from levelfield.cli.main import main

    code = main(["eval", str(FIXTURE), "--agent", "fixture.agents:careful_follow_up",
                 "--config", str(FIXTURE / "test_config.json"), "--quiet"])
    assert code == 0
    assert "7 of 7 cases passed" in capsys.readouterr().out
