"""The smaller items of issue #39, "Numbers a reader can act on": every count read from the summary,
crashes after a pass counted as worse, the run kind named by its command, only recorded hand-offs,
the noise shares, money in plain decimals, badges labelled, and ``--out`` refusing a user's files.

Each test runs the real thing (the command line through ``levelfield.cli.main``, the HTML report
parsed, the ``view`` app through Starlette's test client) and fails on the bug it pins.
"""

import json
import re

import pytest

import levelfield as lf
from levelfield.cli.main import main
from levelfield.failure_summary import AllRunsFailedWarning

# Thirteen cases, in several languages: the agents echo the case's answer, so every run passes but
# the ones an agent is written to crash on.
ANSWERS = {
    "pt_1": ("Acenda a luz da sala", "A luz da sala está acesa."),
    "zh_1": ("把客厅的灯打开", "客厅的灯已经打开了。"),
    "de_1": ("Schalte das Licht in der Küche ein", "Das Küchenlicht ist an."),
    "ja_1": ("玄関のドアをロックして", "ドアをロックしました。"),
    **{f"en_{i}": (f"Question number {i}", f"Answer number {i}.") for i in range(1, 10)},
}
AGENTS = '''
ANSWERS = ANSWERS_HERE
BY_PROMPT = {prompt: answer for prompt, answer in ANSWERS.values()}

def steady(prompt):
    return BY_PROMPT[prompt]

def hasty(prompt):
    if prompt == ANSWERS["zh_1"][0]:
        raise RuntimeError("超时: 服务没有回答")
    return BY_PROMPT[prompt]

def gründlich(prompt):
    return BY_PROMPT[prompt]

def ãgil(prompt):
    return BY_PROMPT[prompt]

LIGHT = [{"tool_name": "find_room", "tool_input": {"room": "sala"}},
         {"tool_name": "switch", "tool_input": {"room": "sala", "on": True}}]

def before(prompt):
    calls = LIGHT if prompt == ANSWERS["pt_1"][0] else []
    return {"response": BY_PROMPT[prompt], "predicted_trajectory": calls}

def after(prompt):
    from levelfield.core.data.types import AgentOutput, ToolCall
    from levelfield.core.errors import AdapterError

    if prompt == ANSWERS["pt_1"][0]:  # found the room, then the switch service went down
        made = AgentOutput(response="", trajectory=[ToolCall(**LIGHT[0])])
        raise AdapterError("Verbindung zum Schalter abgebrochen", error_type="crash", partial=made)
    if prompt == ANSWERS["de_1"][0]:
        return {"response": "Das Licht ist aus.", "predicted_trajectory": []}
    return {"response": BY_PROMPT[prompt], "predicted_trajectory": []}
'''


@pytest.fixture
def thirteen(tmp_path, monkeypatch):
    """A 13-case dataset and a module of agents (``readout_agents``) importable by spec."""
    (tmp_path / "readout_agents.py").write_text(AGENTS.replace("ANSWERS_HERE", repr(ANSWERS)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"case_id": cid, "prompt": p, "reference": a, **_calls_of(cid)}, ensure_ascii=False)
                            + "\n" for cid, (p, a) in ANSWERS.items()), encoding="utf-8")
    return data


def _calls_of(case_id):
    """The light case expects two calls; the others give no reference trajectory."""
    if case_id != "pt_1":
        return {}
    return {"reference_trajectory": [{"tool_name": "find_room", "tool_input": {"room": "sala"}},
                                     {"tool_name": "switch", "tool_input": {"room": "sala", "on": True}}]}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. counts that are wrong -------------------------------------------------------------------------


def test_compare_failure_block_counts_every_run_of_the_agent(thirteen, capsys):
    agents = [f"{name}=readout_agents:{name}" for name in ("steady", "hasty", "gründlich", "ãgil")]
    code, out, _ = run(capsys, "compare", thirteen, *[x for a in agents for x in ("--agent", a)],
                       "-m", "exact_match", "--trials", 3, "-q")
    assert code == 0
    block = out[out.index("Failures:"):]
    assert "  hasty: 3 of 39 runs failed" in block  # 13 cases x 3 trials; was "3 of 3"
    assert "超时: 服务没有回答" in block
    assert "gründlich" not in block and "ãgil" not in block  # no failure, no line
    assert "3/39" in out  # the summary table's "failed runs" row says the same


def test_eval_failure_block_counts_every_run_of_the_agent(thirteen, capsys):
    code, out, _ = run(capsys, "eval", thirteen, "--agent", "readout_agents:hasty", "-m", "exact_match", "-q")
    assert code == 0
    assert "  hasty: 1 of 13 runs failed" in out  # was "1 of 1"


# -- 2. a crash after a pass is worse --------------------------------------------------------------


@pytest.fixture
def two_evals(thirteen, tmp_path, capsys):
    """``levelfield eval --out`` of the agent before and after a change (eval leaves failed runs out:
    a crash has no score), under ``tmp_path/runs``."""
    for name in ("before", "after"):
        run(capsys, "eval", thirteen, "--agent", f"readout_agents:{name}", "-m", "rouge_l_sum",
            "-m", "trajectory_recall", "-q", "--out", tmp_path / "runs" / name)
    starlette = pytest.importorskip("starlette.testclient", reason="levelfield view needs the view extra")
    from levelfield.view import create_app

    return starlette.TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))


def _changed(page, metric):
    group = page[page.index(f'id="metric-{metric}"'):]
    group = group[: group.index("</section>")]
    head = re.search(r"(\d+) worse, (\d+) better", group).groups()
    cases = re.findall(r'class="diffcase" href="[^"]+">([^<]+)</a>', group)
    return tuple(map(int, head)), cases, group


def test_diff_counts_a_crash_after_a_pass_as_worse_and_lists_it_first(two_evals):
    page = two_evals.get("/diff", params={"a": "runs/before", "b": "runs/after"}).text
    counts, cases, group = _changed(page, "rouge_l_sum")
    assert cases == ["pt_1", "de_1"]  # the crash first, then the drop; was de_1, then pt_1 as "–"
    assert counts == (2, 0)  # was (1, 0): the crash was not counted
    crash_row = group[group.index(">pt_1<"):group.index(">de_1<")]
    assert "crashed" in crash_row and "worse" in crash_row
    counts, cases, _ = _changed(page, "trajectory_recall")
    assert (counts, cases) == ((1, 0), ["pt_1"])


def test_diff_the_other_way_counts_the_fixed_crash_as_better(two_evals):
    page = two_evals.get("/diff", params={"a": "runs/after", "b": "runs/before"}).text
    counts, cases, _ = _changed(page, "rouge_l_sum")
    assert counts == (0, 2) and set(cases) == {"pt_1", "de_1"}


def test_diff_case_page_marks_the_crash_worse(two_evals):
    page = two_evals.get("/diff/case", params={"a": "runs/before", "b": "runs/after", "case": "pt_1"}).text
    why = page[page.index('id="why"'):page.index('id="side-by-side"')]
    row = why[why.index("<b>rouge_l_sum</b>"):]
    row = row[: row.index("</tr>")]
    assert "crashed" in row and "worse" in row and row.count("–") == 0


def test_case_page_shows_the_calls_a_crashed_run_made_as_made(two_evals):
    page = two_evals.get("/case", params={"run": "runs/after", "case": "pt_1"}).text
    steps = re.findall(r'<div class="step ([a-z ]+)"', page)
    assert steps == ["user", "call match", "call missing", "error"]
    made = page[page.index('class="step call match"'):page.index('class="step call missing"')]
    assert "find_room" in made
    missing = page[page.index('class="step call missing"'):page.index('class="step error"')]
    assert "switch" in missing and "the run failed before making it" in missing
    assert "did not make" not in page
    assert "Verbindung zum Schalter abgebrochen" in page


def _view_client(root):
    starlette = pytest.importorskip("starlette.testclient", reason="levelfield view needs the view extra")
    from levelfield.view import create_app

    return starlette.TestClient(create_app([root], allowed_hosts=["testserver"]))


def test_case_page_of_a_turn_that_failed_shows_what_that_turn_made(tmp_path):
    from levelfield.core.data.types import AgentOutput, ToolCall
    from levelfield.core.errors import AdapterError

    def agent(prompt):
        if "Küche" in prompt:
            made = AgentOutput(response="", trajectory=[ToolCall(tool_name="find_room", tool_input={"room": "Küche"})])
            raise AdapterError("Dienst nicht erreichbar", error_type="crash", partial=made)
        return {"response": "A luz está acesa.", "predicted_trajectory": [{"tool_name": "find_room", "tool_input": {"room": "sala"}}]}

    case = {"case_id": "zwei_räume", "turns": [
        {"prompt": "Acenda a luz da sala", "reference": "A luz está acesa.",
         "reference_trajectory": [{"tool_name": "find_room", "tool_input": {"room": "sala"}}]},
        {"prompt": "Und jetzt die Küche", "reference": "Die Küche ist hell.",
         "reference_trajectory": [{"tool_name": "find_room", "tool_input": {"room": "Küche"}},
                                  {"tool_name": "switch", "tool_input": {"room": "Küche", "on": True}}]}]}
    with pytest.warns(AllRunsFailedWarning):
        lf.evaluate([case], agent, ["trajectory_recall"], out=tmp_path / "runs" / "mt", progress=False)
    page = _view_client(tmp_path / "runs").get("/case", params={"run": "runs/mt", "case": "zwei_räume"}).text
    column = page[page.index('class="col runcol"'):]
    second = column[column.index(">turn 2<"):]
    assert "Und jetzt die Küche" in second  # the failed turn was left out of the transcript
    assert re.findall(r'<div class="step ([a-z ]+)"', second) == ["user", "call match", "call missing", "error"]
    assert "the run failed before making it" in second


# -- 4. only recorded hand-offs ------------------------------------------------------------------------


def test_a_single_agent_graphs_transcript_shows_no_hand_off(tmp_path):
    pytest.importorskip("langchain.agents", reason="needs the langchain extra")
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from levelfield.testing import ScriptedChatModel
    from levelfield.testing.chat_model import last_human_text, tool_outputs_by_turn

    @tool
    def refund(invoice: int) -> str:
        """Refund an invoice."""
        return f"Rechnung {invoice} erstattet"

    def policy(messages):
        return [("refund", {"invoice": 7})] if not tool_outputs_by_turn(messages) else "退款已完成"

    graph = create_agent(ScriptedChatModel(policy), tools=[refund], name="solo")
    result = lf.evaluate([{"case_id": "返金", "prompt": "Rechnung 7 bitte erstatten", "reference": "退款已完成",
                           "reference_trajectory": [{"tool_name": "refund", "tool_input": {"invoice": 7}}]}],
                         graph, ["trajectory_exact_match"], out=tmp_path / "runs" / "solo", progress=False, retries=0)
    run_ = result.runs[0]
    assert run_.output.handoffs == [] and [c.agent for c in run_.output.trajectory] == ["solo"]
    page = _view_client(tmp_path / "runs").get("/case", params={"run": "runs/solo", "case": "返金"}).text
    steps = re.findall(r'<div class="step ([a-z ]+)"', page)
    assert steps == ["user", "call match", "answer"]  # was a hand-off to "solo" before its call
    assert "hand-off" not in page and "退款已完成" in page


# -- 3. the run kind is the command that made it -----------------------------------------------------


def _header(folder):
    return json.loads((folder / "runs.jsonl").read_text(encoding="utf-8").split("\n", 1)[0])


def test_eval_out_is_recorded_and_viewed_as_an_evaluation(thirteen, tmp_path, capsys):
    runs = tmp_path / "runs"
    run(capsys, "eval", thirteen, "--agent", "readout_agents:gründlich", "-m", "exact_match", "-q", "--out", runs / "e")
    run(capsys, "compare", thirteen, "--agent", "a=readout_agents:steady", "--agent", "b=readout_agents:ãgil",
        "-m", "exact_match", "-q", "--out", runs / "c")
    assert _header(runs / "e")["run_kind"] == "evaluate"  # was "compare"
    assert _header(runs / "c")["run_kind"] == "compare"
    # resumed, and re-read and saved again, it stays what made it
    code, _, _ = run(capsys, "eval", thirteen, "--agent", "readout_agents:gründlich", "-m", "exact_match", "-q",
                     "--out", runs / "e", "--resume")
    assert code == 0 and _header(runs / "e")["run_kind"] == "evaluate"
    assert lf.Comparison.load(runs / "e").record_header()["run_kind"] == "evaluate"
    page = _view_client(runs).get("/").text
    kinds = dict(re.findall(r'<tr data-run="runs/(\w)">.*?</a>(?:<div[^>]*>[^<]*</div>)?</td><td>(\w+)</td>', page))
    assert kinds == {"e": "evaluate", "c": "compare"}


# -- 6. --out refuses a folder of the user's files, whatever their names ----------------------------


@pytest.fixture
def users_table(tmp_path):
    """A folder holding the user's own ``metrics_table.csv`` (a name levelfield also writes), no run record."""
    folder = tmp_path / "meine_ergebnisse"
    folder.mkdir()
    (folder / "metrics_table.csv").write_text("agent,Genauigkeit\nalt,0.93\n", encoding="utf-8")
    return folder


def test_cli_out_refuses_a_folder_holding_the_users_metrics_table(thirteen, users_table, capsys):
    args = ["eval", thirteen, "--agent", "readout_agents:steady", "-m", "exact_match", "-q", "--out", users_table]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert str(users_table) in err and "metrics_table.csv" in err and "--overwrite" in err
    assert (users_table / "metrics_table.csv").read_text(encoding="utf-8") == "agent,Genauigkeit\nalt,0.93\n"
    assert sorted(p.name for p in users_table.iterdir()) == ["metrics_table.csv"]  # nothing written
    code, _, _ = run(capsys, *args, "--overwrite")
    assert code == 0 and (users_table / "runs.jsonl").exists()


@pytest.mark.parametrize("saved", [False, True], ids=["agent", "saved predictions"])
def test_out_refuses_it_from_python_too(users_table, saved):
    from levelfield.core.errors import RecordError

    rows = [{"case_id": "um", "prompt": "Olá", "reference": "你好", **({"response": "你好"} if saved else {})}]
    agent = None if saved else (lambda prompt: "你好")
    with pytest.raises(RecordError) as info:
        lf.evaluate(rows, agent, ["exact_match"], out=users_table, progress=False)
    assert str(users_table) in str(info.value) and "'metrics_table.csv'" in str(info.value)
    assert "overwrite=True" in str(info.value)
    assert sorted(p.name for p in users_table.iterdir()) == ["metrics_table.csv"]
    lf.evaluate(rows, agent, ["exact_match"], out=users_table, overwrite=True, progress=False)
    assert (users_table / "summary.json").exists()


def test_resume_into_its_own_run_record_still_works(thirteen, tmp_path, capsys):
    out = tmp_path / "resumed"
    args = ["eval", thirteen, "--agent", "readout_agents:steady", "-m", "exact_match", "-q", "--out", out]
    assert run(capsys, *args)[0] == 0
    assert (out / "metrics_table.csv").exists() and (out / "report.html").exists()
    assert run(capsys, *args, "--resume")[0] == 0
    rows = [{"case_id": "um", "prompt": "Olá", "reference": "你好", "response": "你好"}]
    lf.evaluate(rows, metrics=["exact_match"], out=tmp_path / "saved", progress=False)
    lf.evaluate(rows, metrics=["exact_match"], out=tmp_path / "saved", progress=False, resume=True)
