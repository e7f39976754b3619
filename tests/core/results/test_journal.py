"""The run journal: every run on disk as it finishes, resume runs only what is missing, Ctrl-C and kill -9 lose nothing finished."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.results.record import read_record
from tests.conftest import disk_full_for

ROOT = Path(__file__).resolve().parents[3]
N = 30


def cases(n=N):
    return [{"case_id": f"c{i}", "prompt": f"case number {i}", "reference": f"CASE NUMBER {i}",
             "reference_trajectory": [{"tool_name": "echo", "tool_input": {"text": f"case number {i}"}}]}
            for i in range(n)]


def write_dataset(tmp_path, n=N):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases(n)), encoding="utf-8")
    return path


def counting(calls):
    def agent(prompt):
        calls.append(prompt)
        return {"response": prompt.upper(), "predicted_trajectory": [{"tool_name": "echo", "tool_input": {"text": prompt}}]}
    return agent


def run_lines(path):
    """The run lines of a journal that are complete (a line being written may be cut off, perhaps
    inside a character: only whole lines are decoded)."""
    out = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        try:
            data = json.loads(line.decode("utf-8"))
        except json.JSONDecodeError:
            continue
        if data.get("kind") == "run":
            out.append(data)
    return out


# -- in Python ------------------------------------------------------------------------------


def test_every_run_is_journaled_as_it_finishes(tmp_path):
    seen_on_disk = []

    def agent(prompt):
        # When a run starts (concurrency 1), every run before it is on disk but the one just before,
        # whose line is written as it starts (the slot does not wait for it: it waits once this run ends).
        seen_on_disk.append(len(run_lines(tmp_path / "runs.jsonl")))
        return {"response": prompt, "predicted_trajectory": []}

    lf.evaluate(cases(8), agent, ["exact_match"], concurrency=1, progress=False, out=tmp_path)
    assert all(k - 1 <= seen <= k for k, seen in enumerate(seen_on_disk)), seen_on_disk
    assert read_record(tmp_path).complete and len(read_record(tmp_path).runs) == 8


def _one_run(i=0):
    from levelfield._core.data.types import AgentOutput, AgentRun

    return AgentRun(case_id=f"c{i}", agent_name="a", trial=0, latency_in_seconds=0.1, output=AgentOutput(response="x"))


def test_a_run_is_acknowledged_only_once_an_fsync_made_its_line_durable(tmp_path, monkeypatch):
    import asyncio

    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal

    data = lf.load_dataset(cases(3))
    path = tmp_path / "runs.jsonl"
    synced = []  # the journal's size on disk at each fsync
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_size), real(fd))[1])

    async def main():
        journal = Journal.create(path, {"kind": "header"}, list(data), fingerprints_of(data))
        acknowledged = [journal.write(_one_run(i)) for i in range(3)]
        assert not any(f.done() for f in acknowledged)  # written on the loop's next turn, then synced
        await asyncio.gather(*acknowledged)
        size = path.stat().st_size  # every line, the three runs' too
        journal.close()
        return size

    size = asyncio.run(main())
    assert synced and synced[0] == size  # the acknowledgement came after an fsync of the whole file


def test_a_journal_whose_fsync_fails_fails_the_evaluation_naming_the_file(tmp_path, monkeypatch):
    import errno

    def fsync(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(lf.WriteError, match=r"runs.jsonl: cannot write the journal \(Input/output error\)"):
        lf.evaluate(cases(5), counting([]), ["exact_match"], progress=False, out=tmp_path)


def test_journal_lines_carry_agent_case_trial_and_case_fingerprint(tmp_path):
    lf.compare(cases(3), {"a": counting([]), "b": counting([])}, ["exact_match"], trials=2, progress=False, out=tmp_path)
    runs = run_lines(tmp_path / "runs.jsonl")
    assert sorted((r["agent"], r["case_id"], r["trial"]) for r in runs) == sorted(
        (a, f"c{i}", t) for a in "ab" for i in range(3) for t in range(2))
    assert all(len(r["fingerprint"]) == 16 for r in runs)


def test_resume_runs_only_the_missing_runs_and_gives_the_uninterrupted_result(tmp_path):
    full_dir, part_dir = tmp_path / "full", tmp_path / "part"
    full = lf.compare(cases(), {"a": counting([])}, ["trajectory_exact_match", "rouge_l_sum"], progress=False, out=full_dir)
    # An interrupted journal: the header, the cases and the first 12 runs.
    lf.compare(cases(), {"a": counting([])}, ["trajectory_exact_match", "rouge_l_sum"], progress=False, out=part_dir)
    lines = (part_dir / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    first_run = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "run")
    (part_dir / "runs.jsonl").write_text("\n".join(lines[: first_run + 12]) + "\n", encoding="utf-8")
    # Runs are journaled as they become durable, not in case order: the kept 12 are whichever came first.
    kept = {json.loads(line)["case_id"] for line in lines[first_run: first_run + 12]}
    prompts = {c["case_id"]: c["prompt"] for c in cases()}
    calls = []
    resumed = lf.compare(cases(), {"a": counting(calls)}, ["trajectory_exact_match", "rouge_l_sum"],
                         progress=False, out=part_dir, resume=True)
    assert len(kept) == 12 and len(calls) == N - 12
    assert sorted(calls) == sorted(prompt for case_id, prompt in prompts.items() if case_id not in kept)
    assert resumed.summary.drop(columns=[c for c in resumed.summary if "latency" in c]).equals(
        full.summary.drop(columns=[c for c in full.summary if "latency" in c]))
    assert {p.name for p in part_dir.iterdir()} >= {"runs.jsonl", "metrics_table.csv", "summary.json", "report.html"}
    assert read_record(part_dir).complete and len(read_record(part_dir).runs) == N


def test_resume_of_a_complete_record_makes_no_agent_call(tmp_path):
    lf.evaluate(cases(), counting([]), ["exact_match"], progress=False, out=tmp_path)
    calls = []
    again = lf.evaluate(cases(), counting(calls), ["exact_match"], progress=False, out=tmp_path, resume=True)
    assert calls == [] and again.summary_metrics["exact_match/mean"] == 1.0


def test_resume_with_more_trials_runs_only_the_new_trials(tmp_path):
    lf.evaluate(cases(4), counting([]), ["exact_match"], progress=False, out=tmp_path)
    calls = []
    result = lf.evaluate(cases(4), counting(calls), ["exact_match"], trials=3, progress=False, out=tmp_path, resume=True)
    assert len(calls) == 8 and len(result.runs) == 12


def test_resume_with_another_dataset_names_the_cases_that_differ(tmp_path):
    lf.evaluate(cases(5), counting([]), ["exact_match"], progress=False, out=tmp_path)
    changed = cases(5)
    changed[2]["prompt"] = "something else"
    with pytest.raises(lf.RecordError, match=r"1 case\(s\) with another prompt.*'c2'"):
        lf.evaluate(changed, counting([]), ["exact_match"], progress=False, out=tmp_path, resume=True)
    with pytest.raises(lf.RecordError, match=r"2 case\(s\) not in this dataset \('c3', 'c4'\)"):
        lf.evaluate(cases(3), counting([]), ["exact_match"], progress=False, out=tmp_path, resume=True)


def test_resume_with_other_agents_names_them(tmp_path):
    lf.compare(cases(3), {"a": counting([]), "b": counting([])}, ["exact_match"], progress=False, out=tmp_path)
    with pytest.raises(lf.RecordError, match=r"'b' not given now; 'c' not in the journal"):
        lf.compare(cases(3), {"a": counting([]), "c": counting([])}, ["exact_match"], progress=False,
                   out=tmp_path, resume=True)


def test_a_changed_reference_does_not_block_resume_and_is_rescored(tmp_path):
    lf.evaluate(cases(3), counting([]), ["exact_match"], progress=False, out=tmp_path)
    new = cases(3)
    new[0]["reference"] = "something else"
    with pytest.warns(UserWarning, match=r"the references of 1 case\(s\) changed .*'c0'"):
        result = lf.evaluate(new, counting([]), ["exact_match"], progress=False, out=tmp_path, resume=True)
    assert [s["exact_match/score"] for s in result.scores] == [0.0, 1.0, 1.0]


def test_an_existing_record_is_never_replaced_by_accident(tmp_path):
    lf.evaluate(cases(3), counting([]), ["exact_match"], progress=False, out=tmp_path)
    calls = []
    with pytest.raises(lf.RecordError, match="resume=True.*overwrite=True"):
        lf.evaluate(cases(3), counting(calls), ["exact_match"], progress=False, out=tmp_path)
    assert calls == []
    lf.evaluate(cases(3), counting(calls), ["exact_match"], progress=False, out=tmp_path, overwrite=True)
    assert len(calls) == 3


def test_resume_needs_an_out_folder():
    with pytest.raises(lf.ConfigError, match="resume=True needs out"):
        lf.evaluate(cases(1), counting([]), ["exact_match"], resume=True)


def test_unknown_run_option_suggests_the_right_name():
    with pytest.raises(lf.ConfigError, match="'concurency' \\(did you mean 'concurrency'\\?\\)"):
        lf.evaluate(cases(1), counting([]), ["exact_match"], concurency=4)


def test_run_config_and_keywords_combine_keywords_winning():
    config = lf.RunConfig(concurrency=1, trials=2, progress=False)
    result = lf.evaluate(cases(2), counting([]), ["exact_match"], config=config, trials=3)
    assert len(result.runs) == 6 and result.config.concurrency == 1


def test_a_cut_off_last_line_is_ignored_and_that_run_is_redone(tmp_path):
    lf.evaluate(cases(4), counting([]), ["exact_match"], progress=False, out=tmp_path)
    path = tmp_path / "runs.jsonl"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 40], encoding="utf-8")  # killed mid-write of the last run
    record = read_record(tmp_path)
    assert record.truncated and len(record.runs) == 3
    # The runs finish (and are journaled) in whatever order their calls return: the cut-off one is any case.
    kept = {key[1] for key in record.runs}
    cut = [c["prompt"] for c in cases(4) if c["case_id"] not in kept]
    calls = []
    lf.evaluate(cases(4), counting(calls), ["exact_match"], progress=False, out=tmp_path, resume=True)
    assert len(cut) == 1 and calls == cut


def test_report_of_an_interrupted_journal_names_the_missing_runs(tmp_path, capsys):
    lf.compare(cases(4), {"a": counting([])}, ["exact_match"], progress=False, out=tmp_path)
    path = tmp_path / "runs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")
    # The runs are journaled in whatever order their calls return: the two lost are any two cases.
    lost = [json.loads(line)["run"]["case_id"] for line in lines[-2:]]
    from levelfield.cli.main import main

    assert main(["report", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "lacks 2 of 4 runs" in err and "--resume" in err
    assert all(f"'{case}'" in err for case in lost), (lost, err)


# -- the CLI, killed ----------------------------------------------------------------------------


def _start_compare(tmp_path, out, extra=()):
    env = dict(os.environ, LF_TEST_CALLS=str(tmp_path / "calls.txt"), LF_TEST_SLEEP="0.1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "levelfield", "compare", str(write_dataset(tmp_path)),
           "--agent", "a=tests.fixture.counting_agent:agent", "--agent", "b=tests.fixture.counting_agent:other",
           "--metric", "exact_match", "--concurrency", "2", "--out", str(out), "--quiet", *extra]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_runs(out, n, proc, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        path = out / "runs.jsonl"
        if path.exists() and len(run_lines(path)) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the command ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("no runs were journaled in time")


def _calls(tmp_path):
    path = tmp_path / "calls.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_kill_9_half_way_loses_only_runs_in_flight_and_resume_makes_only_the_missing_calls(tmp_path):
    out = tmp_path / "results"
    proc = _start_compare(tmp_path, out)
    _wait_for_runs(out, 10, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # waited for, its pipes closed
    kept = read_record(out)
    assert 10 <= len(kept.runs) < 2 * N and not kept.complete
    before = len(_calls(tmp_path))
    proc = _start_compare(tmp_path, out, ["--resume"])
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert len(_calls(tmp_path)) - before == 2 * N - len(kept.runs)
    final = read_record(out)
    assert final.complete and len(final.runs) == 2 * N
    assert (out / "report.html").exists() and "exact_match" in stdout


def test_ctrl_c_keeps_what_finished_prints_how_to_resume_and_exits_130(tmp_path):
    out = tmp_path / "results"
    proc = _start_compare(tmp_path, out)
    _wait_for_runs(out, 6, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr and "runs are saved in" in stderr
    kept = read_record(out)
    assert len(kept.runs) >= 6
    resume_line = stderr.strip().splitlines()[-1].strip()
    assert resume_line.startswith("levelfield compare") and resume_line.endswith("--resume")


# -- case lines written while the first runs are in flight ---------------------------------------


def test_case_lines_of_a_large_dataset_all_come_before_every_run_line(tmp_path):
    # More cases than a new journal writes in one turn of the event loop, and runs that finish at once.
    many = cases(1000)
    lf.evaluate(many, counting([]), ["exact_match"], progress=False, out=tmp_path, concurrency=50)
    kinds = []
    for line in (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines():
        kinds.append(json.loads(line)["kind"])
    assert kinds == ["header"] + ["case"] * 1000 + ["run"] * 1000
    assert len(read_record(tmp_path).cases) == 1000


def test_a_journal_killed_mid_run_holds_every_case_before_its_runs(tmp_path):
    seen = []

    def agent(prompt):
        # The first run finishing: every case line is on disk before its run line, whatever else is.
        if not seen:
            # The loop may be writing case lines while this thread reads: a last line without its
            # newline is one still being written, and only whole lines are read.
            whole = (tmp_path / "runs.jsonl").read_bytes().split(b"\n")[:-1]
            seen.append([json.loads(line.decode("utf-8"))["kind"] for line in whole])
        return prompt

    result = lf.evaluate(cases(600), agent, ["exact_match"], progress=False, out=tmp_path, concurrency=1)
    assert result.summary_metrics["failure/count"] == 0  # the first run read the journal without failing
    record = read_record(tmp_path)
    assert len(record.cases) == 600 and len(record.runs) == 600
    assert seen[0][0] == "header" and set(seen[0][1:]) <= {"case"}  # no run line before the cases


def test_a_new_journal_in_an_event_loop_writes_its_cases_after_returning_and_all_of_them_on_close(tmp_path):
    import asyncio

    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal

    data = lf.load_dataset(cases(450))

    async def main():
        journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header", "format": "levelfield.run-record", "version": 1},
                                 list(data), fingerprints_of(data))
        right_away = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").count("\n")
        await asyncio.sleep(0)  # one turn of the loop: the first case lines
        one_turn = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").count("\n")
        journal.close()  # before the loop wrote the rest: close writes them
        return right_away, one_turn

    right_away, one_turn = asyncio.run(main())
    assert right_away == 1  # the header only: the runs need not wait for 450 case lines
    assert 1 < one_turn < 451
    assert [c.case_id for c in read_record(tmp_path).cases] == [c.case_id for c in data]


@pytest.fixture
def case_lines_do_not_fit(monkeypatch):
    """A disk that fills up after a journal's header: no case line fits."""
    disk_full_for(monkeypatch, "case")


def test_case_lines_that_cannot_be_written_fail_the_evaluation_naming_the_journal(tmp_path, case_lines_do_not_fit):
    with pytest.raises(lf.WriteError, match=r"runs.jsonl: cannot write the journal \(No space left on device\)"):
        lf.evaluate(cases(5), counting([]), ["exact_match"], progress=False, out=tmp_path)


def test_case_lines_that_cannot_be_written_are_raised_on_close_when_no_run_finished(tmp_path, case_lines_do_not_fit):
    import asyncio

    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal

    data = lf.load_dataset(cases(3))

    async def main():
        journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header"}, list(data), fingerprints_of(data))
        await asyncio.sleep(0)  # the loop tries the case lines: the disk is full
        journal.close()  # no run was told: closing says it

    with pytest.raises(lf.WriteError, match="cannot write the journal"):
        asyncio.run(main())


@pytest.mark.parametrize("refused", ["case", "run"])
def test_a_journal_written_outside_an_event_loop_raises_its_disk_error_without_a_stray_cause(tmp_path, monkeypatch, refused):
    # Outside a loop the lines are written at once. They once were written inside the ``except RuntimeError``
    # that asked for a running loop, so the disk's error carried "no running event loop" as its context: the
    # traceback said "During handling of the above exception" about an error that never mattered.
    from levelfield._core.data.types import AgentOutput, AgentRun
    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal

    disk_full_for(monkeypatch, refused)
    data = lf.load_dataset(cases(2))
    journal = None
    with pytest.raises(OSError) as info:
        journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header"}, list(data), fingerprints_of(data))
        journal.write(AgentRun(case_id="c0", agent_name="a", output=AgentOutput(response="Olá 你好 Grüße こんにちは")))
    if journal is not None:
        journal._f.close()
    chain, exc = [], info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert not any(isinstance(e, RuntimeError) for e in chain), [repr(e) for e in chain]


# -- runs read back by where their lines start (a journal-backed result) -------------------------


def _mixed_runs(n: int) -> list:
    from levelfield._core.data.types import AgentOutput, AgentRun, ToolCall

    texts = ["Licht aus, bitte", "把灯关掉", "ライトを消して", "Desligue a luz", "plain"]
    return [AgentRun(case_id=f"c{i}", agent_name="ä-agent", trial=i % 2, latency_in_seconds=0.1 * i,
                     output=AgentOutput(response=texts[i % 5] * (i + 1),
                                        trajectory=[ToolCall(tool_name="set", tool_input={"raum": texts[i % 5]})]))
            for i in range(n)]


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["no-loop", "event-loop"])
def test_tracked_offsets_read_each_run_back_alone_whatever_its_text(tmp_path, in_a_loop):
    import asyncio

    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal
    from levelfield._core.results.record import read_runs_at
    from levelfield._core.score.metrics.base import Score

    data = lf.load_dataset([{"case_id": f"c{i}", "prompt": "灯" * i} for i in range(40)])
    runs = _mixed_runs(40)

    def write_all() -> Journal:
        journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header", "format": "levelfield.run-record", "version": 1},
                                 list(data), fingerprints_of(data))
        journal.track_offsets()
        for run in runs:
            journal.write(run, {"m": Score(float(run.trial), explanation="überall 一致")})
        journal.close()
        return journal

    async def in_loop() -> Journal:
        return write_all()

    journal = asyncio.run(in_loop()) if in_a_loop else write_all()
    assert journal.offsets is not None and len(journal.offsets) == 40
    picked = [39, 0, 17, 3]
    back = read_runs_at(journal.path, [journal.offsets[i] for i in picked])
    assert [run for run, _ in back] == [runs[i] for i in picked]
    assert [scores["m"].explanation for _, scores in back] == ["überall 一致"] * 4
    record = read_record(journal.path)
    assert [record.offsets[(r.agent_name, r.case_id, r.trial)] for r in runs] == list(journal.offsets)


def test_finishing_a_journal_gives_it_its_header_and_says_how_far_its_lines_moved(tmp_path):
    from levelfield._core.results.journal import Journal
    from levelfield._core.results.record import finish_journal, read_runs_at

    runs = _mixed_runs(5)
    journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header", "format": "levelfield.run-record", "version": 1,
                                                       "status": "running"}, [], {})
    journal.track_offsets()
    for run in runs:
        journal.write(run)
    journal.close()
    moved = finish_journal(journal.path, {"kind": "header", "format": "levelfield.run-record", "version": 1,
                                          "status": "complete", "note": "fertig ✓"})
    assert moved == len('"complete","note":"fertig ✓"'.encode()) - len('"running"')
    assert read_record(journal.path).header["status"] == "complete"
    assert [r for r, _ in read_runs_at(journal.path, [o + moved for o in journal.offsets])] == runs
    with pytest.raises(lf.RecordError, match=r"runs\.jsonl at byte 0: expected a run line"):
        read_runs_at(journal.path, [0])


@pytest.mark.parametrize("late, passes", [
    ("error", 1),  # empty in the first pages, text in the last: one pass (its type is text from the start)
    ("column", 3),  # a column only a late page has: written again, in two passes
    ("tokens", 3),  # empty (so left out) in the first page, filled later: written again
])
def test_a_table_written_in_pages_is_the_table_written_whole(tmp_path, late, passes):
    import pandas as pd

    from levelfield._core.results.tables import table_to_csv, table_to_parquet, write_tables_in_pages

    rows = [{"case_id": f"c{i}", "trial": 0, "prompt": "把灯关掉" if i % 2 else "Licht aus", "m/score": i / 10,
             "total_tokens": None, "input_tokens": None, "cost_usd": None, "failure": int(i == 7), "error": None}
            for i in range(23)]
    rows[2]["tags"] = ["a", "ü"]
    rows[21]["error"] = "boom ✗"
    if late == "column":
        rows[17]["late"] = "später"
    if late == "tokens":
        rows[18].update(total_tokens=12, input_tokens=5, cost_usd=0.5)
    calls = []

    def pages(size: int):
        calls.append(size)
        for start in range(0, len(rows), size):
            yield [dict(r) for r in rows[start : start + size]]

    paths = write_tables_in_pages(pages, tmp_path, trials=1, size=5)
    assert len(calls) == passes
    whole = pd.DataFrame(rows)
    whole = whole.drop(columns=[c for c in ("total_tokens", "input_tokens", "cost_usd") if whole[c].isna().all()] + ["trial"])
    table_to_csv(whole, tmp_path / "whole.csv")
    table_to_parquet(whole, tmp_path / "whole.parquet")
    assert (tmp_path / "whole.csv").read_bytes() == paths["metrics_table"].read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(paths["metrics_table_parquet"]), pd.read_parquet(tmp_path / "whole.parquet"))


@pytest.mark.parametrize("judged", [False, True], ids=["computed", "judged"])
def test_save_keeps_the_journal_as_the_record_unless_scores_came_after_it(tmp_path, monkeypatch, judged):
    from levelfield._core.results import held as result_module

    async def shouted(row):  # an async metric, scored with the judged ones at the end: after the journal line
        return float(row["response"].isupper())

    written = []
    real = result_module.write_record
    monkeypatch.setattr(result_module, "write_record", lambda *a, **k: written.append(a[0]) or real(*a, **k))
    metrics = ["exact_match"] + ([lf.metrics.CustomMetric("shouted", shouted)] if judged else [])
    result = lf.evaluate(write_dataset(tmp_path), counting([]), metrics, out=tmp_path / "out", progress=False)
    assert len(written) == int(judged)  # computed scores: the journal already holds every run as recorded
    record = read_record(tmp_path / "out")
    assert record.header["status"] == "complete" and len(record.runs) == N
    assert {k: s for k, (_, s) in record.runs.items()} == {(r.agent_name, r.case_id, r.trial): s for r, s in
                                                            zip(result.runs, result.recorded_scores)}
    loaded = lf.EvalResult.load(tmp_path / "out")
    assert loaded.summary_metrics == pytest.approx(result.summary_metrics, nan_ok=True)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_files_out_writes_are_the_files_save_writes_of_the_same_result(tmp_path, monkeypatch, kind):
    """out=... keeps the journal as the record and writes the tables and summary at the end (beside
    an async agent, from rows made while the runs ran); they hold what ``result.save`` writes of the
    same result (run lines in the order the runs finished)."""
    from levelfield._core.results.held import HeldRuns

    made_ahead = []
    table_rows = HeldRuns.table_rows
    monkeypatch.setattr(HeldRuns, "table_rows", lambda self, rows, made=None: made_ahead.append(
        sum(row is not None for row in made or ())) or table_rows(self, rows, made))
    rows = cases(40)
    for i, row in enumerate(rows):
        row["team"] = ["red", "=blue", None][i % 3]  # a metadata column, a cell a spreadsheet would run
        if i % 4 == 1:  # a call the agent makes differently: the explanations name what is missing or extra
            row["reference_trajectory"].append({"tool_name": "log", "tool_input": {"n": i}})
        if i % 9 == 4:
            row["reference_trajectory"] = None

    def answer(prompt):
        if prompt.endswith(" 13"):
            raise RuntimeError("no answer for 13")
        calls = [{"tool_name": "echo", "tool_input": {"text": prompt}}]
        return {"response": prompt.upper() if len(prompt) % 2 else "-1", "predicted_trajectory": calls}

    async def async_answer(prompt):
        return answer(prompt)

    metrics = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_precision", "trajectory_recall", "exact_match"]
    with pytest.warns(lf.MissingReferenceWarning):
        result = lf.evaluate(rows, answer if kind == "sync" else async_answer, metrics, out=tmp_path / "out", trials=2,
                             retries=0, progress=False)
    # Beside an async agent every row was made while the runs ran (none beside a sync agent's threads).
    assert made_ahead == [80 if kind == "async" else 0]
    saved = result.save(tmp_path / "saved")
    assert made_ahead[1:] == [0]  # save made every row itself
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in saved.values())
    for name in ("metrics_table.csv", "summary.json") + (("metrics_table.parquet",) if "metrics_table_parquet" in saved else ()):
        assert (out / name).read_bytes() == (tmp_path / "saved" / name).read_bytes(), name
    journal, whole = ((p / "runs.jsonl").read_text(encoding="utf-8").splitlines() for p in (out, tmp_path / "saved"))
    headers = [json.loads(lines[0]) for lines in (journal, whole)]
    for header in headers:
        header.pop("created_at")
    assert headers[0] == headers[1] and headers[0]["status"] == "complete"
    assert sorted(journal[1:]) == sorted(whole[1:]) and len(whole) == 1 + 40 + 80
    table = (out / "metrics_table.csv").read_text(encoding="utf-8")
    assert "calls match the reference one for one" in table and "missing log" in table and "'=blue" in table
