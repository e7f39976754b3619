"""Reliability at the edges, data side: text UTF-8 cannot hold, torn journals, full disks, formula
cells in CSV, async agents that interrupt or block, malformed input files."""

import asyncio
import csv
import errno
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import levelfield as lf
from levelfield._core.results.journal import Journal
from levelfield._core.results.record import read_record

ROOT = Path(__file__).resolve().parents[3]
LONE = "\ud800"  # half of a UTF-16 pair: what a model's output cut mid-character leaves


def cases(n=6):
    return [{"case_id": f"c{i}", "prompt": f"frage {i} 你好", "reference": f"antwort {i}"} for i in range(n)]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 1. lone surrogates ------------------------------------------------------------------------


def surrogate_agent(prompt):
    if prompt.endswith("1 你好"):
        return {"response": f"Olá {LONE} 日本語",
                "predicted_trajectory": [{"tool_name": f"such{LONE}", "tool_input": {"q": f"x{LONE}", f"k{LONE}": 1},
                                          "tool_output": [f"ergebnis {LONE}"]}]}
    if prompt.endswith("2 你好"):
        raise ValueError(f"kaputt {LONE}")
    return {"response": prompt}


def test_a_lone_surrogate_in_an_answer_is_journaled_with_every_run_batched_with_it(tmp_path):
    result = lf.evaluate(cases(), surrogate_agent, ["exact_match"], progress=False, out=tmp_path, concurrency=6)
    record = read_record(tmp_path)
    assert len(record.runs) == 6 and record.complete
    run = record.runs[(result.agent_name, "c1", 0)][0]
    assert run.output.response == "Olá \ufffd 日本語"
    call = run.output.trajectory[0]
    assert call.tool_name == "such\ufffd" and call.tool_input == {"q": "x\ufffd", "k\ufffd": 1}
    assert call.tool_output == ["ergebnis \ufffd"]
    assert record.runs[(result.agent_name, "c2", 0)][0].error.endswith("kaputt \ufffd")


def test_a_cleaned_answer_keeps_what_the_agent_gave_in_raw():
    result = lf.evaluate(cases(), surrogate_agent, ["exact_match"], progress=False)
    output = result.runs[1].output
    assert output.response == "Olá \ufffd 日本語"
    assert output.raw["response"] == f"Olá {LONE} 日本語"  # the function agent's own return value


def test_a_cleaned_output_without_raw_keeps_the_output_as_given_there():
    from levelfield._core.data.types import AgentRun, clean_run

    given = lf.AgentOutput(response=f"a{LONE}", intermediate_responses=[f"b{LONE}"])
    run = clean_run(AgentRun(case_id="c", agent_name="x", output=given))
    assert run.output.response == "a\ufffd" and run.output.intermediate_responses == ["b\ufffd"]
    assert run.output.raw is given


def test_a_run_without_lone_surrogates_is_kept_as_it_is():
    from levelfield._core.data.types import AgentRun, clean_run

    run = AgentRun(case_id="c", agent_name="x", output=lf.AgentOutput(response="日本語 😀 Straße"))
    assert clean_run(run) is run


@pytest.mark.parametrize("export", ["save", "to_csv", "to_jsonl", "to_parquet"])
def test_every_export_of_a_result_with_lone_surrogates_encodes(tmp_path, export):
    pytest.importorskip("pyarrow") if export == "to_parquet" else None
    result = lf.evaluate(cases(), surrogate_agent, ["exact_match"], progress=False)
    target = tmp_path / ("out" if export == "save" else f"table.{export[3:]}")
    getattr(result, export)(target)
    written = target / "runs.jsonl" if export == "save" else target
    assert written.stat().st_size > 0
    if export != "to_parquet":
        assert "\ufffd" in written.read_text(encoding="utf-8")


def test_a_comparison_with_lone_surrogates_saves_its_report(tmp_path):
    cmp = lf.compare(cases(), {"a": surrogate_agent, "b": lambda p: p}, ["exact_match"], progress=False)
    paths = lf.report.save(cmp, tmp_path)
    assert "Olá \ufffd 日本語" in paths["report"].read_text(encoding="utf-8")


def test_a_journal_line_that_cannot_be_encoded_fails_the_evaluation_instead_of_hanging(tmp_path, monkeypatch):
    import levelfield._core.run.runner as runner

    monkeypatch.setattr(runner, "clean_run", lambda run: run)  # as before text was cleaned on entry
    with pytest.raises(lf.RecordError, match=r"runs.jsonl: cannot write the journal \(UnicodeEncodeError"):
        lf.evaluate(cases(), surrogate_agent, ["exact_match"], progress=False, out=tmp_path, timeout=5)


def test_a_dataset_holding_an_escaped_lone_surrogate_is_journaled(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"case_id": "a", "prompt": "hallo \\ud800 welt", "reference": "x"}\n', encoding="utf-8")
    lf.evaluate(lf.load_dataset(data), lambda p: p, ["exact_match"], progress=False, out=tmp_path / "out")
    assert read_record(tmp_path / "out").cases[0].prompt == "hallo \ufffd welt"


# -- 2. torn journals ----------------------------------------------------------------------------


def journal_of(tmp_path, n=4):
    out = tmp_path / "out"
    lf.evaluate(cases(n), lambda p: f"答え {p}", ["exact_match"], progress=False, out=out)
    return out / "runs.jsonl"


def cut_inside_a_character(path):
    """Cut the last run line inside a multi-byte character, as a crash mid-write can."""
    data = path.read_bytes()
    last = data.rindex(b"\xe7\xad\x94")  # 答 in UTF-8: three bytes
    path.write_bytes(data[: last + 1])


def test_a_journal_cut_inside_a_character_reads_without_its_torn_line(tmp_path):
    path = journal_of(tmp_path)
    cut_inside_a_character(path)
    record = read_record(path)
    assert record.truncated and len(record.runs) == 3


def test_a_journal_cut_inside_a_character_loads_as_a_comparison(tmp_path):
    path = journal_of(tmp_path)
    cut_inside_a_character(path)
    cmp = lf.Comparison.load(path.parent)
    assert len(cmp.missing_runs) == 1


def test_report_of_a_journal_cut_inside_a_character_names_the_missing_run(tmp_path, capsys):
    from levelfield.cli import main

    path = journal_of(tmp_path)
    cut_inside_a_character(path)
    assert main(["report", str(path.parent)]) == 0
    assert "lacks 1 of 4 runs" in capsys.readouterr().err


def test_resume_of_a_journal_cut_inside_a_character_cuts_the_torn_line_and_finishes(tmp_path):
    path = journal_of(tmp_path)
    cut_inside_a_character(path)
    calls = []
    lf.evaluate(cases(4), lambda p: calls.append(p) or f"答え {p}", ["exact_match"], progress=False,
                out=path.parent, resume=True)
    assert len(calls) == 1
    record = read_record(path)
    assert not record.truncated and len(record.runs) == 4 and record.complete


def test_a_journal_missing_only_its_last_newline_survives_two_interruptions(tmp_path):
    path = journal_of(tmp_path)
    lines = path.read_bytes().split(b"\n")
    # Keep two of four runs, the last of them whole but without its newline (killed right before it).
    kept = [line for line in lines if line][:-2]
    path.write_bytes(b"\n".join(kept))
    journal = Journal.reopen(read_record(path))  # the first resume appends one more run, then is killed
    run = lf.evaluate(cases(4), lambda p: f"答え {p}", ["exact_match"], progress=False).runs[2]
    journal.write(run)
    journal._f.close()
    record = read_record(path)  # the second resume reads every line written so far
    assert sorted(k[1] for k in record.runs) == ["c0", "c1", "c2"]


# -- 5. disk errors ------------------------------------------------------------------------------


def test_an_out_folder_under_a_file_is_one_clear_error_naming_the_path(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(lf.WriteError, match=r"a-file/out/runs.jsonl: cannot write the journal \(Not a directory\)") as info:
        lf.evaluate(cases(2), lambda p: p, ["exact_match"], progress=False, out=blocker / "out")
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOTDIR


def test_the_cli_reports_an_unwritable_out_folder_in_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    data = write_jsonl(tmp_path / "data.jsonl", cases(2))
    done = subprocess.run(
        [sys.executable, "-m", "levelfield", "eval", str(data), "--agent", "tests.fixture.agents:careful_follow_up",
         "--out", str(blocker / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write the journal (Not a directory)" in done.stderr


def full_disk(monkeypatch, after=0):
    """The disk fills after the first ``after`` run lines of the journal: a write holding more
    writes the run lines that fit and fails with ENOSPC (the header and the case lines, written
    first, fit). Counted by line, not by write: the journal's thread writes the runs finished
    together in one write."""
    writes = {"n": 0}
    real_create = Journal.create.__func__

    def create(cls, path, header, cases, fingerprints):
        journal = real_create(cls, path, header, cases, fingerprints)
        handle = journal._f
        real_write = handle.write

        class Handle:
            closed = False

            def write(self, text):
                if '"kind":"run"' not in text:
                    return real_write(text)
                lines = text.splitlines(keepends=True)
                room = max(0, after - writes["n"])
                writes["n"] += min(room, len(lines))
                if len(lines) > room:
                    real_write("".join(lines[:room]))
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(text)

            def flush(self):
                handle.flush()

            def fileno(self):
                return handle.fileno()

            def close(self):
                self.closed = True
                handle.close()

        journal._f = Handle()
        return journal

    monkeypatch.setattr(Journal, "create", classmethod(create))


def test_a_full_disk_stops_the_evaluation_with_one_error_naming_the_journal_and_the_cause(tmp_path, monkeypatch):
    full_disk(monkeypatch, after=2)
    with pytest.raises(lf.WriteError, match=r"runs.jsonl: cannot write the journal \(No space left on device\); free some space"):
        lf.evaluate(cases(8), lambda p: p, ["exact_match"], progress=False, out=tmp_path, concurrency=1, timeout=5)
    assert len(read_record(tmp_path).runs) == 2  # what was written before the disk filled is kept


def test_a_journal_cut_off_while_its_cases_were_written_names_that_cause_on_resume(tmp_path):
    path = journal_of(tmp_path, n=4)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:20])  # header, two cases, a torn third
    with pytest.raises(lf.RecordError, match=r"cut off while it was being created \(2 of its 4 case lines.*disk was full") as info:
        lf.evaluate(cases(4), lambda p: p, ["exact_match"], progress=False, out=path.parent, resume=True)
    assert "dataset" not in str(info.value)


def test_a_journal_cut_inside_its_header_names_that_cause(tmp_path):
    path = journal_of(tmp_path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(lf.RecordError, match="cut off inside its header line"):
        lf.evaluate(cases(4), lambda p: p, ["exact_match"], progress=False, out=path.parent, resume=True)


def test_a_report_that_fails_half_way_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    import levelfield._core.results.writing as writing

    cmp = lf.compare(cases(3), {"a": lambda p: p, "b": lambda p: p.upper()}, ["exact_match"], progress=False)
    report = lf.report.write(cmp, tmp_path / "report.html")
    before = report.read_bytes()

    def failing_replace(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writing.os, "replace", failing_replace)
    with pytest.raises(lf.WriteError, match=r"report.html: cannot write \(No space left on device\)"):
        lf.report.write(cmp, report)
    assert report.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind


@pytest.mark.parametrize("export", ["save", "to_csv", "to_jsonl"])
def test_exports_to_an_unwritable_place_are_one_clear_error(tmp_path, export):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = lf.evaluate(cases(2), lambda p: p, ["exact_match"], progress=False)
    with pytest.raises(lf.WriteError, match="a-file.*Not a directory"):
        getattr(result, export)(blocker / "sub" / "x")


# -- 3. CSV for spreadsheets -----------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://example.invalid","klick")', "+1+1", "-2+3", "@SUM(A1:A2)", "\tTab", "\rCR"]


def formula_agent(prompt):
    index = int(prompt.split()[1])
    return {"response": FORMULAS[index],
            "predicted_trajectory": [{"tool_name": "=cmd|' /C calc'!A0", "tool_input": {}}]}


def csv_cells(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_to_csv_neutralises_formula_cells_from_answers():
    import tempfile

    result = lf.evaluate(cases(len(FORMULAS)), formula_agent, ["exact_match"], progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        rows = csv_cells(result.to_csv(Path(tmp) / "t.csv"))
    assert [r["response"] for r in rows] == ["'" + f for f in FORMULAS]
    assert all(r["predicted_trajectory"].startswith("[") for r in rows)  # JSON text: no formula


def test_csv_keeps_plain_numbers_and_numeric_scores_as_numbers(tmp_path):
    from levelfield._core.results.tables import table_to_csv

    table = pd.DataFrame({"case_id": ["-0.5", "=1"], "score/score": [-0.5, 1.0], "note": ["-3", "+2e5"]})
    table_to_csv(table, tmp_path / "t.csv")
    rows = csv_cells(tmp_path / "t.csv")
    assert [r["case_id"] for r in rows] == ["-0.5", "'=1"]
    assert [r["score/score"] for r in rows] == ["-0.5", "1.0"]
    assert [r["note"] for r in rows] == ["-3", "+2e5"]


def test_the_cli_metrics_table_and_comparison_csv_are_neutralised_but_jsonl_and_parquet_keep_raw_values(tmp_path):
    cmp = lf.compare(cases(len(FORMULAS)), {"a": formula_agent, "b": lambda p: p}, ["exact_match"], progress=False)
    paths = cmp.save(tmp_path)
    rows = [r for r in csv_cells(paths["metrics_table"]) if r["agent"] == "a"]
    assert [r["response"] for r in rows] == ["'" + f for f in FORMULAS]
    if "metrics_table_parquet" in paths:
        raw = pd.read_parquet(paths["metrics_table_parquet"])
        assert list(raw[raw["agent"] == "a"]["response"]) == FORMULAS
    result = cmp.results["a"]
    lines = [json.loads(line) for line in result.to_jsonl(tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["output"]["response"] for line in lines] == FORMULAS


def test_the_batch_table_writer_writes_a_neutralised_csv(tmp_path):
    import numpy as np

    from levelfield._core.score.batch.scorer import ScoredBatch
    from levelfield.formats.batches import table_writer

    writer = table_writer(tmp_path / "t.csv")
    writer.write(ScoredBatch({"case_id": ["=c0", "c1"], "failure": np.array([0, 0]),
                              "latency_in_seconds": np.array([0.1, 0.2]), "m/score": np.array([-0.5, 1.0])}))
    table = csv_cells(writer.close())
    assert [r["case_id"] for r in table] == ["'=c0", "c1"]
    assert [float(r["m/score"]) for r in table] == [-0.5, 1.0]


# -- 6. bad input files ------------------------------------------------------------------------


def load_error(path):
    with pytest.raises(lf.DatasetError) as info:
        lf.load_dataset(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_an_unclosed_csv_quote_is_an_error_naming_the_line_it_opens_on_not_merged_rows(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('prompt,reference\n"Grüß Gott, Welt\nq2,r2\n"q3",r3\nq4,r4\n', encoding="utf-8")
    assert load_error(path).startswith(f"{path} line 2: a quoted cell is never closed (it runs on to line 4)")


def test_a_duplicate_csv_header_is_refused_naming_it(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,reference,prompt\n你好,hallo,olá\n", encoding="utf-8")
    assert "column 'prompt' appears twice in the header (columns 1 and 3)" in load_error(path)


def test_a_csv_row_with_a_missing_cell_names_file_row_and_field(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,reference,case_id\nこんにちは,hallo,a\nolá,b\n", encoding="utf-8")
    assert load_error(path).startswith(f"{path} row 2 (line 3), field 'case_id': missing")


def test_csv_rows_keep_their_real_line_when_a_quoted_cell_spans_lines(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('prompt,reference\n"zwei\nZeilen",x\n"drei",\n', encoding="utf-8")
    ds = lf.load_dataset(path)
    assert [c.location for c in ds] == ["d.csv row 1 (line 2)", "d.csv row 2 (line 4)"]
    assert ds[0].prompt == "zwei\nZeilen" and ds[1].reference is None


def test_a_csv_cell_longer_than_csvs_default_limit_is_read(tmp_path):
    path = tmp_path / "d.csv"
    long = "长" * 200_000
    path.write_text(f"prompt,reference\np,{long}\n", encoding="utf-8")
    assert lf.load_dataset(path)[0].reference == long


def test_saved_predictions_read_in_batches_refuse_a_duplicate_csv_header(tmp_path):
    from levelfield.formats.batches import batch_source

    path = tmp_path / "d.csv"
    path.write_text("prompt,response,response\np,a,b\n", encoding="utf-8")
    with pytest.raises(lf.DatasetError, match="column 'response' appears twice"):
        list(batch_source(path).batches)


@pytest.mark.parametrize("case_id", [{"x": 1}, ["a"], True])
def test_a_case_id_that_is_not_text_or_a_number_is_refused(tmp_path, case_id):
    path = write_jsonl(tmp_path / "d.jsonl", [{"case_id": case_id, "prompt": "Grüezi"}])
    assert "field 'case_id': a case id must be text or a number" in load_error(path)


@pytest.mark.parametrize("case_id", ["", "  ", "a\r\nb", "tab\there", "nul\x00"])
def test_an_empty_case_id_or_one_with_control_characters_is_refused(tmp_path, case_id):
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": case_id, "prompt": "你好"}])
    message = load_error(path)
    assert message.startswith("d.jsonl line 1, field 'id': the case id")
    assert "empty" in message or "control character" in message


def test_number_and_unicode_case_ids_are_kept():
    ds = lf.load_dataset([{"case_id": 7, "prompt": "a"}, {"case_id": "café-日本", "prompt": "b"}])
    assert [c.case_id for c in ds] == ["7", "café-日本"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_json_nested_100000_deep_is_a_clear_error_not_a_recursion_error(tmp_path, suffix):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / f"d{suffix}"
    body = {".json": deep, ".jsonl": f'{{"prompt": "p", "x": {deep}}}\n',
            ".csv": f"prompt,reference_trajectory\np,{deep}\n"}[suffix]
    path.write_text(body, encoding="utf-8")
    assert "nested deeper than 100 levels" in load_error(path)


def test_a_row_nested_just_over_the_limit_is_refused_naming_its_line(tmp_path):
    value: object = "leaf"
    for _ in range(150):
        value = {"k": value}
    path = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "ok"}, {"prompt": "p", "state": value}])
    assert load_error(path).startswith("d.jsonl line 2: nested deeper than 100 levels")


OTLP = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [
    {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "invoke_agent a",
     "startTimeUnixNano": "1", "endTimeUnixNano": "2",
     "attributes": [
         {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
         {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
             [{"role": "user", "parts": [{"type": "text", "content": "Wie spät ist es?"}]}])}},
         {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
             [{"role": "assistant", "parts": [{"type": "text", "content": "三時です"}]}], ensure_ascii=False)}}]}]}]}]}


def test_a_whole_otlp_export_loads_as_one_trace(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(OTLP, indent=2, ensure_ascii=False), encoding="utf-8")
    assert [c.response for c in lf.load_traces(path)] == ["三時です"]


def test_a_truncated_otlp_export_is_an_error_naming_the_file_not_a_dataset_of_failed_rows(tmp_path):
    text = json.dumps(OTLP, indent=2, ensure_ascii=False)
    path = tmp_path / "trace.json"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"trace.json: not valid JSON .*the file may be cut short") as info:
        lf.load_traces(path)
    assert "one trace per line" in str(info.value) and "trace-2" not in str(info.value)


@pytest.mark.parametrize("data, field", [
    ({"resourceSpans": "x"}, "field 'resourceSpans': expected a list, got str"),
    ({"resourceSpans": [1]}, "resourceSpans[0]: expected an object, got int"),
    ({"resourceSpans": [{"scopeSpans": "y"}]}, "resourceSpans[0], field 'scopeSpans': expected a list"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": {"a": 1}}]}]}, "scopeSpans[0], field 'spans': expected a list"),
])
def test_otlp_of_the_wrong_shape_is_a_dataset_error_naming_file_and_field(tmp_path, data, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(lf.DatasetError) as info:
        lf.load_traces(path)
    assert str(info.value).startswith(str(path)) and field in str(info.value)


def test_otlp_of_the_wrong_shape_in_memory_is_a_dataset_error_naming_the_field():
    with pytest.raises(lf.DatasetError, match="field 'resourceSpans': expected a list"):
        lf.load_traces({"resourceSpans": "x"})


# -- 4. async agents that interrupt or block -----------------------------------------------------


def test_an_async_agent_raising_keyboard_interrupt_loses_no_run_of_the_journal(tmp_path):
    async def agent(prompt):
        if prompt == "frage 3 你好":
            raise KeyboardInterrupt("模型中断")
        return prompt

    result = lf.evaluate(cases(50), agent, ["exact_match"], progress=False, out=tmp_path, concurrency=4)
    record = read_record(tmp_path)
    assert len(record.runs) == 50 and record.complete
    failed = [r for r in result.runs if r.failure]
    assert [(r.case_id, r.error_type) for r in failed] == [("c3", "KeyboardInterrupt")]
    assert "模型中断" in failed[0].error


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_real_sigint_still_stops_the_evaluation(tmp_path, kind):
    import os
    import signal

    def press_ctrl_c(prompt):
        if prompt.startswith("frage 2"):
            os.kill(os.getpid(), signal.SIGINT)
            import time

            time.sleep(2)  # the signal is handled meanwhile
        return prompt

    async def async_press(prompt):
        if prompt.startswith("frage 2"):
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(2)  # asyncio.run's handler cancels the evaluation meanwhile
        return prompt

    agent = press_ctrl_c if kind == "sync" else async_press
    with pytest.raises(KeyboardInterrupt):
        lf.evaluate(cases(6), agent, ["exact_match"], progress=False, out=tmp_path, concurrency=1)
    kept = {k[1] for k in read_record(tmp_path).runs}
    assert {"c0", "c1"} <= kept and len(kept) < 6  # what finished is kept; the rest was never run


def test_the_sigint_handler_is_restored_after_an_evaluation():
    import signal

    before = signal.getsignal(signal.SIGINT)
    lf.evaluate(cases(2), lambda p: p, ["exact_match"], progress=False)
    assert signal.getsignal(signal.SIGINT) is before


def test_an_async_agent_spinning_on_the_loop_is_stopped_at_its_timeout_and_named():
    from levelfield._core.run.runner import BlockingAgentWarning

    async def spinner(prompt):
        if prompt.startswith("frage 1"):
            while True:  # a busy loop: no await, the event loop is held
                pass
        return prompt

    with pytest.warns(BlockingAgentWarning, match="agent 'spinner'"):
        result = lf.evaluate(cases(3), spinner, ["exact_match"], progress=False, timeout=0.5)
    assert [(r.failure, r.error_type) for r in result.runs] == [(False, None), (True, "timeout"), (False, None)]


def test_an_async_agent_sleeping_on_the_loop_is_named_while_it_still_blocks(monkeypatch):
    import time
    import warnings

    import levelfield._core.run.watchdog as watchdog

    monkeypatch.setattr(watchdog, "STUCK_SECONDS", 0.2)
    seen_while_blocked = []

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        async def sleeper(prompt):
            time.sleep(1.5)  # blocks the loop; the warning must come before this returns
            seen_while_blocked.append([str(w.message) for w in caught])
            return prompt

        lf.evaluate(cases(1), sleeper, ["exact_match"], progress=False, timeout=None)
    assert any("agent 'sleeper' has blocked the event loop" in m and "no timeout to end it" in m
               for m in seen_while_blocked[0])
