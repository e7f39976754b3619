"""``levelfield view`` over HTTP: the runs list, paging, filters, diffs, auth, and what it refuses.

Most tests call the app with Starlette's TestClient; the auth and real-server tests talk to the
server on 127.0.0.1 port 0 with httpx.
"""

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import levelfield as lf
from _view_runs import CASES, METRICS, home_agent, three_runs, written_at
from levelfield import Comparison
from levelfield._core.results.record import read_record
from levelfield.view.catalog import Catalog
from levelfield.view.index import RecordIndex

pytest.importorskip("starlette", reason="levelfield view needs the view extra")
import httpx  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from levelfield.view import create_app, start  # noqa: E402

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return three_runs(tmp_path_factory.mktemp("view") / "runs")


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(create_app([runs], allowed_hosts=["testserver"]))


def rows(page, cls):
    return re.findall(rf'<tr class="{cls}">', page)


# -- the index counts as the report does -------------------------------------------------------------


def test_index_case_scores_equal_the_comparisons_with_failures_and_trials(tmp_path):
    def flaky(prompt):
        if "thermostat" in prompt or "luz" in prompt:
            raise RuntimeError("down")
        return home_agent(2)(prompt)

    lf.compare(CASES, {"good": home_agent(3), "flaky": flaky}, METRICS, trials=2, out=tmp_path / "c", progress=False)
    index = RecordIndex(tmp_path / "c" / "runs.jsonl")
    index.refresh()
    cmp = Comparison.load(tmp_path / "c")
    for metric in METRICS:
        for agent in ("good", "flaky"):
            np.testing.assert_allclose(index.case_scores(metric, agent), cmp.case_scores(metric)[agent].to_numpy())


def test_index_reads_a_growing_journal_on_from_where_it_stopped(tmp_path):
    lf.evaluate(CASES, home_agent(2), METRICS, out=tmp_path / "r", progress=False)
    path = tmp_path / "r" / "runs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header, body = lines[: 1 + len(CASES)], lines[1 + len(CASES):]
    partial = tmp_path / "j" / "runs.jsonl"
    partial.parent.mkdir()
    partial.write_text("".join(header) + "".join(body[:2]) + body[2][:30], encoding="utf-8")  # a line being written
    index = RecordIndex(partial)
    index.refresh()
    assert len(index.runs) == 2
    stamp = index.stamp
    with partial.open("a", encoding="utf-8") as f:
        f.write(body[2][30:] + "".join(body[3:]))
    assert index.refresh() and index.stamp != stamp
    assert len(index.runs) == len(CASES)
    assert index.detail(index.position("玄関"))[1][0][0].output.response == "ドアをロックしました。"


# -- the runs list -----------------------------------------------------------------------------------


def run_row(page, run_id):
    """The runs list's row of ``run_id`` (wherever the list's order puts it)."""
    row = page[page.index(f'<tr data-run="{run_id}"'):]
    return row[: row.index("</tr>")]


def test_runs_list_shows_every_run_with_its_scores_and_failures(client):
    page = client.get("/").text
    assert len(re.findall(r"<tr data-run=", page)) == 3
    for name in ("runs/v1", "runs/v2", "runs/v3"):
        assert f'data-run="{name}"' in page
    # Newest first by the second each run was written in, so the order depends on the clock: read v1's own row.
    assert '<span class="fail">1</span>' in run_row(page, "runs/v1")  # the thermostat timeout
    assert '<span class="fail">' not in run_row(page, "runs/v2")


def test_runs_list_is_newest_first_and_runs_of_one_second_keep_their_names_order(runs, tmp_path):
    root = tmp_path / "runs"
    for version, second in (("v1", 0), ("v2", 1), ("v3", 1)):
        shutil.copytree(runs / version, root / version)
        written_at(root / version, f"2026-01-01T00:00:0{second}+00:00")
    page = TestClient(create_app([root], allowed_hosts=["testserver"])).get("/").text
    assert re.findall(r'<tr data-run="([^"]+)"', page) == ["runs/v2", "runs/v3", "runs/v1"]
    assert '<span class="fail">1</span>' in run_row(page, "runs/v1")


def test_runs_list_sorts_by_a_column_both_ways(client):
    up = re.findall(r'<tr data-run="([^"]+)"', client.get("/?sort=run&desc=").text)
    down = re.findall(r'<tr data-run="([^"]+)"', client.get("/?sort=run&desc=1").text)
    assert up == ["runs/v1", "runs/v2", "runs/v3"] and down == up[::-1]


def test_runs_list_filters_failed_runs_and_by_text(client):
    assert re.findall(r'<tr data-run="([^"]+)"', client.get("/?failed=1").text) == ["runs/v1"]
    assert re.findall(r'<tr data-run="([^"]+)"', client.get("/?q=v3").text) == ["runs/v3"]


def test_runs_list_against_a_baseline_run_marks_the_regressed_run(tmp_path):
    # Ten cases like lights_on, all regressing: a drop the paired test calls significant.
    cases = [{**CASES[0], "case_id": f"light {i}"} for i in range(10)]
    lf.evaluate(cases, home_agent(2), METRICS, out=tmp_path / "runs" / "old", progress=False)
    lf.evaluate(cases, home_agent(3), METRICS, out=tmp_path / "runs" / "new", progress=False)
    page = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"])).get("/?baseline=runs/old").text
    new = run_row(page, "runs/new")
    assert ">regressed</span>" in new and "trajectory_exact_match" in new


# -- one run: the report, the cases paged and filtered --------------------------------------------------


def test_run_page_serves_the_report_sections_and_links_cases_to_transcripts(client):
    page = client.get("/run", params={"run": "runs/v1"}).text
    for section in ('id="summary"', 'id="charts"', 'id="failures"', 'id="cases"', 'id="glossary"'):
        assert section in page
    assert 'href="/case?run=runs%2Fv1&amp;case=thermostat"' in page


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("big") / "runs"
    cases = [{"case_id": f"case-{i:04d}", "prompt": f"question {i}", "reference": "yes" if i % 3 else "no"} for i in range(1, 121)]
    lf.evaluate(cases, lambda p: "no" if p.endswith("7") else "yes", ["exact_match"], out=root / "big", progress=False)
    return TestClient(create_app([root], allowed_hosts=["testserver"]))


def case_ids(page):
    return re.findall(r'class="caselink" href="[^"]+">([^<]+)</a>', page)


def test_cases_are_paged_on_the_server(big):
    first = big.get("/run", params={"run": "runs/big"}).text
    third = big.get("/run", params={"run": "runs/big", "page": 3}).text
    assert case_ids(first) == [f"case-{i:04d}" for i in range(1, 51)]
    assert case_ids(third) == [f"case-{i:04d}" for i in range(101, 121)]
    assert "page 3 of 3" in third


def test_a_page_past_the_end_shows_the_last(big):
    assert case_ids(big.get("/run", params={"run": "runs/big", "page": 99}).text)[-1] == "case-0120"


def test_filter_metric_below_a_threshold(big):
    page = big.get("/run", params={"run": "runs/big", "metric": "exact_match", "below": "0.5"}).text
    wrong = wrong_answers()
    assert case_ids(page) == wrong and f"of {len(wrong)} (filtered from 120)" in page


def wrong_answers():
    return [f"case-{i:04d}" for i in range(1, 121) if ("no" if str(i).endswith("7") else "yes") != ("yes" if i % 3 else "no")]


def test_filter_text_search(big):
    assert case_ids(big.get("/run", params={"run": "runs/big", "q": "question 11"}).text) == [
        "case-0011", "case-0110", "case-0111", "case-0112", "case-0113", "case-0114", "case-0115", "case-0116",
        "case-0117", "case-0118", "case-0119"]


def test_sort_lowest_score_first(big):
    lowest = case_ids(big.get("/run", params={"run": "runs/big", "sort": "score", "metric": "exact_match"}).text)
    wrong = wrong_answers()
    assert len(wrong) < 50 and lowest[: len(wrong)] == wrong
    assert lowest[len(wrong)] == "case-0001"


def test_filter_failed_runs_and_error_type(client):
    assert case_ids(client.get("/run", params={"run": "runs/v1", "failed": "1"}).text) == ["thermostat"]
    assert case_ids(client.get("/run", params={"run": "runs/v1", "error": "TimeoutError"}).text) == ["thermostat"]
    assert case_ids(client.get("/run", params={"run": "runs/v1", "error": "ValueError"}).text) == []


def test_filter_by_agent(tmp_path):
    lf.compare(CASES, {"v1": home_agent(1), "v3": home_agent(3)}, METRICS, out=tmp_path / "runs" / "c", progress=False)
    app = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    assert case_ids(app.get("/run", params={"run": "runs/c", "agent": "v3", "failed": "1"}).text) == []
    assert case_ids(app.get("/run", params={"run": "runs/c", "agent": "v1", "failed": "1"}).text) == ["thermostat"]


# -- a case ----------------------------------------------------------------------------------------


def test_case_page_shows_the_transcript_step_by_step_with_hand_offs_and_marks(client):
    page = client.get("/case", params={"run": "runs/v3", "case": "lights_on"}).text
    steps = re.findall(r'<div class="step ([a-z ]+)"', page)
    assert steps == ["user", "handoff", "call match", "handoff", "call mismatch", "answer"]
    assert "sub-agent <b>planner</b>" in page and "sub-agent <b>devices</b>" in page
    assert "expected switch(" in page and "I switched on the hall light." in page
    assert "missing switch (args differ); extra switch (args differ)" in page  # the metric's own explanation


def test_case_page_of_a_failed_run_shows_the_error_and_the_missing_calls(client):
    page = client.get("/case", params={"run": "runs/v1", "case": "thermostat"}).text
    assert re.findall(r'<div class="step ([a-z ]+)"', page) == ["user", "call missing", "error"]
    assert "thermostat service did not answer" in page and "counts as 0" in page


def test_case_ids_in_other_scripts_are_found(client):
    page = client.get("/case", params={"run": "runs/v2", "case": "玄関"}).text
    assert "玄関のドアをロックして" in page and "ドアをロックしました。" in page


# -- a diff ----------------------------------------------------------------------------------------


def test_diff_lists_the_regressed_case_first_with_the_gates_test(client):
    page = client.get("/diff", params={"a": "runs/v1", "b": "runs/v3"}).text
    group = page[page.index('id="metric-trajectory_exact_match"'):]
    changed = re.findall(r'class="diffcase" href="[^"]+">([^<]+)</a>', group[: group.index("</section>")])
    assert changed == ["lights_on", "thermostat"]  # the drop first, then the timeout fixed
    assert "the regression gate's paired test" in page and "no significant change (same as runs/v1" in page


def test_diff_case_shows_both_transcripts_and_why(client):
    page = client.get("/diff/case", params={"a": "runs/v1", "b": "runs/v3", "case": "lights_on"}).text
    assert page.count('class="col runcol"') == 2
    assert "The kitchen light is on." in page and "I switched on the hall light." in page
    why = page[page.index('id="why"'):page.index('id="side-by-side"')]
    assert "calls match the reference one for one" in why and "missing switch (args differ)" in why


def test_diff_needs_two_runs(client):
    assert client.get("/diff", params={"a": "runs/v1"}).status_code == 400


# -- 404s and what is refused ---------------------------------------------------------------------


@pytest.mark.parametrize("url,params", [
    ("/run", {"run": "runs/v9"}),
    ("/run", {"run": "../../etc/passwd"}),
    ("/run", {"run": "/etc"}),
    ("/case", {"run": "runs/v1", "case": "nope"}),
    ("/case", {"run": "runs/v1", "case": "../../../etc/passwd"}),
    ("/case", {"run": "runs/../runs/v1", "case": "lights_on"}),
    ("/diff", {"a": "runs/v1", "b": "runs/../../x"}),
    ("/diff/case", {"a": "runs/v1", "b": "runs/v3", "case": "nope"}),
    ("/diff", {"a": "runs/v1", "b": "runs/v3", "metric": "bleu"}),
    ("/static/..%2f..%2fcore%2ferrors.py", {}),
    ("/static/../report/html.py", {}),
    ("/runs.jsonl", {}),
    ("/runs/v1/runs.jsonl", {}),
])
def test_unknown_runs_cases_and_paths_are_404(client, url, params):
    response = client.get(url, params=params)
    assert response.status_code == 404
    assert "levelfield.run-record" not in response.text and "__all__" not in response.text


def test_a_host_header_other_than_this_machine_is_refused(runs):
    app = TestClient(create_app([runs]), base_url="http://evil.example")
    assert app.get("/").status_code == 400
    assert TestClient(create_app([runs]), base_url="http://127.0.0.1:8000").get("/").status_code == 200


def test_pages_carry_a_policy_that_allows_no_inline_script(client):
    response = client.get("/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "unsafe-inline" not in response.headers["content-security-policy"].split("script-src")[1].split(";")[0]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert not re.search(r"<script>", response.text)


# -- XSS: every field a run holds, escaped ------------------------------------------------------------


def test_markup_in_every_field_is_escaped(tmp_path):
    def hostile(prompt):
        if "crash" in prompt:
            raise RuntimeError(f"crashed {PAYLOAD}")
        return {"response": PAYLOAD, "predicted_trajectory": [
            {"tool_name": f"t{PAYLOAD}", "tool_input": {PAYLOAD: PAYLOAD}, "tool_output": PAYLOAD, "agent": PAYLOAD}]}

    cases = [{"case_id": f"c{PAYLOAD}", "prompt": f"p{PAYLOAD}", "reference": PAYLOAD,
              "reference_trajectory": [{"tool_name": PAYLOAD, "tool_input": {"k": PAYLOAD}}]},
             {"case_id": "crash", "prompt": "crash", "reference": "x", "reference_trajectory": []}]
    folder = tmp_path / "runs" / '<svg onload="window.__pwned=3">'
    lf.compare(cases, {f"a{PAYLOAD}": hostile}, ["trajectory_exact_match", "rouge_l_sum"], out=folder, progress=False)
    app = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    run_id = 'runs/<svg onload="window.__pwned=3">'
    pages = [app.get("/").text, app.get("/run", params={"run": run_id}).text,
             app.get("/case", params={"run": run_id, "case": f"c{PAYLOAD}"}).text,
             app.get("/case", params={"run": run_id, "case": "crash"}).text,
             app.get("/diff", params={"a": run_id, "b": run_id}).text,
             app.get("/diff/case", params={"a": run_id, "b": run_id, "case": f"c{PAYLOAD}"}).text]
    for page in pages:
        assert "<img" not in page and "<svg onload" not in page and "<script>window" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in pages[2]


# -- auth, and the real server --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded(runs):
    with start([runs], token="s3cret-token-42") as server:
        yield server.url


def test_without_the_token_every_page_is_401(guarded):
    for path in ("/", "/run?run=runs/v1", "/static/view.js", "/api/version", "/nope"):
        assert httpx.get(guarded + path).status_code == 401


@pytest.mark.parametrize("token", ["short", "mit Leerzeichen 123", "tökén-geheim", 'quote"d-token'])
def test_a_token_that_cannot_travel_in_a_header_is_refused(runs, token):
    with pytest.raises(lf.ConfigError, match="--auth-token"):
        create_app([runs], token=token)


def test_a_wrong_token_is_401(guarded):
    assert httpx.get(guarded + "/", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.get(guarded + "/?token=nope", follow_redirects=False).status_code == 401


def test_a_bearer_token_opens_the_pages(guarded):
    response = httpx.get(guarded + "/run", params={"run": "runs/v2"}, headers={"Authorization": "Bearer s3cret-token-42"})
    assert response.status_code == 200 and 'id="cases"' in response.text


def test_a_token_in_the_url_sets_a_cookie_once_and_leaves_the_address(guarded):
    with httpx.Client(base_url=guarded) as browser:
        first = browser.get("/run", params={"run": "runs/v2", "token": "s3cret-token-42"})
        assert first.status_code == 303 and first.headers["location"] == "/run?run=runs%2Fv2"
        assert "httponly" in first.headers["set-cookie"].lower() and "samesite=strict" in first.headers["set-cookie"].lower()
        assert browser.get("/run", params={"run": "runs/v2"}).status_code == 200


def test_the_real_server_pages_and_polls(runs):
    with start([runs]) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert httpx.get(server.url + "/run", params={"run": "runs/v3", "page": 1}).status_code == 200
        version = httpx.get(server.url + "/api/version").json()["version"]
        assert re.fullmatch(r"[0-9a-f]{16}", version)
        assert httpx.get(server.url + "/api/version", params={"run": "runs/v0"}).status_code == 404


def test_a_new_run_changes_the_version_and_shows_in_the_list(tmp_path):
    root = tmp_path / "runs"
    lf.evaluate(CASES, home_agent(2), METRICS, out=root / "a", progress=False)
    app = TestClient(create_app([root], allowed_hosts=["testserver"], rescan=0))
    before = app.get("/api/version").json()["version"]
    lf.evaluate(CASES, home_agent(3), METRICS, out=root / "b", progress=False)
    assert app.get("/api/version").json()["version"] != before
    assert 'data-run="runs/b"' in app.get("/").text


# -- saved predictions, the catalog, the command --------------------------------------------------------


@pytest.mark.slow  # the eval command in a subprocess, with worker processes
def test_a_scored_table_of_saved_predictions_is_listed_and_paged(tmp_path):
    rows = [{"case_id": f"r{i}", "prompt": "p", "reference": "done", "response": "done" if i % 2 else "nope"} for i in range(60)]
    data = tmp_path / "saved.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "levelfield", "eval", str(data), "--workers", "2", "-m", "exact_match",
                          "--out", str(tmp_path / "runs" / "saved")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    app = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    assert "saved predictions" in app.get("/").text
    page = app.get("/run", params={"run": "runs/saved", "metric": "exact_match", "below": "0.5"}).text
    assert case_ids(page) == [f"r{i}" for i in range(0, 60, 2)]


def test_catalog_ids_are_folders_below_the_served_folders_parent(runs):
    assert sorted(Catalog([runs]).runs()) == ["runs/v1", "runs/v2", "runs/v3"]
    assert read_record(runs / "v1").agents == ["home"]


@pytest.mark.slow  # the view command in a subprocess
def test_view_command_warns_when_bound_wider_than_this_machine(runs):
    proc = subprocess.Popen([sys.executable, "-m", "levelfield", "view", str(runs), "--host", "0.0.0.0", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        warning = proc.stderr.readline()
        served = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)  # its graceful shutdown, however slow a loaded machine makes it; its pipes closed
    assert "warning: listening on 0.0.0.0" in warning and "--auth-token" in warning
    assert "serving the runs under" in served


def test_view_command_refuses_a_folder_that_does_not_exist(tmp_path):
    out = subprocess.run([sys.executable, "-m", "levelfield", "view", str(tmp_path / "nope")], capture_output=True, text=True)
    assert out.returncode == 2 and "no such folder" in out.stderr


def test_without_the_extra_the_view_names_it():
    code = ("import sys; sys.modules['starlette'] = None; import levelfield.view as v\n"
            "try:\n    v.create_app(['.'])\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'levelfield[view]'" in out.stdout
