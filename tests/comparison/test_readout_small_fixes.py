"""The smaller items of issue #39, "Numbers a reader can act on": every count read from the summary,
crashes after a pass counted as worse, the run kind named by its command, only recorded hand-offs,
the noise shares, money in plain decimals, badges labelled, and ``--out`` refusing a user's files.

Each test runs the real thing (the command line through ``levelfield.cli.main``, the HTML report
parsed, the ``view`` app through Starlette's test client) and fails on the bug it pins.
"""

import json
import re
import unicodedata

import pytest

import levelfield as lf
from levelfield import AllRunsFailedWarning
from levelfield.cli.main import main

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
    from levelfield._core.data.types import AgentOutput, ToolCall
    from levelfield._core.errors import AdapterError

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
    from levelfield._core.data.types import AgentOutput, ToolCall
    from levelfield._core.errors import AdapterError

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

    from levelfield.testing import ScriptedChatModel, tool_outputs_by_turn

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
    from levelfield._core.errors import RecordError

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


# -- 5. the report: noise shares, chart labels, money, badges ----------------------------------------

TINY = {"tiny-model": {"input_per_mtok": 0.05, "output_per_mtok": 0.1}}  # a run: $0.0000083 or $0.00001


def _priced(answer):
    def agent(prompt):
        return {"response": answer(prompt), "usage": {"input_tokens": 100, "output_tokens": 33, "model": "tiny-model"}}

    return agent


@pytest.fixture(scope="module")
def priced_report(tmp_path_factory):
    """Two agents of a model that costs millionths of a dollar a run, three trials: 稳定的代理人 scores 1 on
    every run (no variance at all), a long-named German one alternates."""
    rows = [{"case_id": f"c{i}", "prompt": p, "reference": "ok"}
            for i, p in enumerate(["打开灯", "電気をつけて", "Licht an", "Ligue a luz", "Light on", "灯"])]
    calls = iter(range(10_000))
    agents = {"稳定的代理人": _priced(lambda p: "ok"),
              "Zuverlässiger_Übersetzungsassistent_mit_sehr_langem_Namen": _priced(lambda p: "ok" if next(calls) % 3 else "nein")}
    cmp = lf.compare(rows, agents, ["exact_match"], prices=TINY, trials=3, progress=False)
    path = lf.report.write(cmp, tmp_path_factory.mktemp("report") / "report.html")
    return cmp, path.read_text(encoding="utf-8")


def _visible_text(page):
    page = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", page)


def test_report_writes_no_nan_share_for_an_agent_without_variance(priced_report):
    _, page = priced_report
    noise = page[page.index('id="noise"'):page.index("</section>", page.index('id="noise"'))]
    assert "nan" not in noise.lower()  # was "between cases nan%, the agent's own run-to-run variation nan%"
    steady = _visible_text(noise[noise.index("稳定的代理人"):])
    assert "no variance" in steady.split("Zuverlässiger")[0]


def test_report_writes_dollars_in_plain_decimals(priced_report):
    cmp, page = priced_report
    text = _visible_text(page)
    assert not re.search(r"\d\.?\d*e-\d", text)  # was "8.32e-06", "$8.3e-06"
    assert "$0.0000083 per run" in text  # the verdict's sentence and the chart's point
    assert "0.0000083" in page[page.index('id="summary"'):]
    assert "$0.0000083" in str(cmp) and "e-0" not in str(cmp)  # print(cmp): the same money


def test_money_has_one_formatter():
    from levelfield._core.data.money import dollars
    from levelfield.comparison._text import _usd
    from levelfield.comparison._verdict import _dollars

    assert [dollars(x) for x in (8.32e-06, 0.0042, 0.01, 0.125, 8.3249, 1234.5, 0)] == \
        ["$0.0000083", "$0.0042", "$0.01", "$0.12", "$8.32", "$1,234.50", "$0.00"]
    assert dollars(float("nan")) == "unknown" and dollars(None) == "unknown"
    assert _dollars(8.32e-06) == "$0.0000083" and _usd(8.32e-06) == "0.0000083"


def _columns(text):
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def test_report_chart_labels_stay_inside_their_charts(priced_report):
    _, page = priced_report
    for svg in re.findall(r"<svg[^>]*>.*?</svg>", page, flags=re.S):
        width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
        for attrs, label in re.findall(r"<text([^>]*)>(?:<title>[^<]*</title>)?([^<]*)</text>", svg):
            x, y = float(re.search(r'x="([-\d.]+)"', attrs)[1]), float(re.search(r'y="([-\d.]+)"', attrs)[1])
            anchor = (re.search(r'text-anchor="(\w+)"', attrs) or [None, "start"])[1]
            px = _columns(label) * 7  # 12px text: a Latin letter ~7px at most, a CJK character two of them
            start = {"start": x, "middle": x - px / 2, "end": x - px}[anchor]
            assert y - 12 >= 0 and y <= height, (label, y)  # was y=4 for a point at the top: cut off
            assert start >= 0 and start + px <= width, (label, start, px, width)


def test_report_badges_name_their_metric(priced_report):
    _, page = priced_report
    chips = re.findall(r'<span class="chip [a-z]+"[^>]*>((?:<span[^>]*>[^<]*</span>)?[^<]*)</span>', page)
    assert len(chips) >= 2 * 6 * 2  # the case list and the drill-down, per agent and case
    assert all("exact_match" in _visible_text(c) for c in chips), chips[:3]  # was a bare "1.00"


def test_view_case_list_badges_name_their_metric(two_evals):
    page = two_evals.get("/run", params={"run": "runs/after"}).text
    rows = re.findall(r'<tr class="caserow">.*?</tr>', page, flags=re.S)
    assert len(rows) == 13
    chips = re.findall(r'<span class="chip [a-z]+"[^>]*>((?:<span[^>]*>[^<]*</span>)?[^<]*)</span>', "".join(rows))
    assert len(chips) == 13 * 2
    assert sorted({_visible_text(c).split()[0] for c in chips}) == ["rouge_l_sum", "trajectory_recall"]
