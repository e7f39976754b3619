"""A failed run keeps the agent's traceback: in the run record (bounded, credentials redacted), on the
case page of ``levelfield view``, and on stderr for the first failure with ``LEVELFIELD_DEBUG=1``."""

from __future__ import annotations

import pytest

import levelfield as lf
from levelfield._core.run.tracebacks import MAX_TRACEBACK_CHARS

FAST = {"progress": False, "retries": 0}
SECRET = "sk-test-0123456789abcdef"
CASES = [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": "x"} for i in range(3)]


def _lookup_inventory(prompt: str) -> str:
    raise ConnectionError(f"inventory service refused key {SECRET} for {prompt!r}")


def failing_agent(prompt: str) -> str:
    return _lookup_inventory(prompt)


def test_a_failed_run_keeps_the_agents_traceback_with_credentials_redacted(monkeypatch):
    monkeypatch.setenv("INVENTORY_API_KEY", SECRET)
    result = lf.evaluate(CASES[:1], failing_agent, metrics=["exact_match"], **FAST)
    run = result.runs[0]
    assert run.failure and run.traceback is not None
    assert "_lookup_inventory" in run.traceback and "failing_agent" in run.traceback
    assert "ConnectionError: inventory service refused key *** for 'question 0'" in run.traceback
    assert SECRET not in run.traceback and SECRET not in run.model_dump_json()
    assert all(r.traceback is None for r in lf.evaluate(CASES[:1], lambda p: "x", metrics=[], **FAST).runs)


def test_a_long_traceback_is_bounded_and_keeps_its_end():
    def deep(n: int) -> str:
        if n == 0:
            raise ValueError("the innermost error " + "x" * 20_000)
        return deep(n - 1)

    result = lf.evaluate(CASES[:1], lambda prompt: deep(20), metrics=[], **FAST)
    kept = result.runs[0].traceback
    assert kept is not None and len(kept) <= MAX_TRACEBACK_CHARS + 60
    assert kept.startswith("[the first ") and kept.rstrip().endswith("x" * 100)


def test_the_traceback_is_journaled_and_shown_by_view(tmp_path, monkeypatch):
    pytest.importorskip("starlette.testclient")
    from starlette.testclient import TestClient

    from levelfield.view import create_app

    monkeypatch.setenv("INVENTORY_API_KEY", SECRET)
    lf.evaluate(CASES[:1], failing_agent, metrics=["exact_match"], out=str(tmp_path / "runs" / "r1"), **FAST)
    journal = (tmp_path / "runs" / "r1" / "runs.jsonl").read_text(encoding="utf-8")
    assert "_lookup_inventory" in journal and SECRET not in journal
    assert "_lookup_inventory" in lf.EvalResult.load(tmp_path / "runs" / "r1").runs[0].traceback
    client = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    page = client.get("/case", params={"run": "runs/r1", "case": "c0"}).text
    assert "<summary>traceback</summary>" in page and "_lookup_inventory" in page and SECRET not in page


def test_levelfield_debug_prints_the_first_failures_traceback_once(monkeypatch, capsys):
    monkeypatch.setenv("LEVELFIELD_DEBUG", "1")
    lf.evaluate(CASES, failing_agent, metrics=[], concurrency=1, **FAST)
    err = capsys.readouterr().err
    assert err.count("the first failed run") == 1 and "case 'c0'" in err and "_lookup_inventory" in err
    monkeypatch.delenv("LEVELFIELD_DEBUG")
    lf.evaluate(CASES, failing_agent, metrics=[], **FAST)
    assert "the first failed run" not in capsys.readouterr().err
