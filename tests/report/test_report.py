"""The HTML report as text: self-contained, a chart per metric, every agent-produced string escaped."""

import re

import pytest

import levelfield as lf
from levelfield.report import render as render_report

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
CASES = [
    {"case_id": "a", "prompt": "turn on <b>light</b>", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "b", "prompt": "turn off light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
]
METRICS = ["trajectory_exact_match", "rouge_l_sum"]


def hostile(prompt):
    if "off" in prompt:
        raise RuntimeError(f"crashed: {PAYLOAD}")
    return {"response": PAYLOAD, "predicted_trajectory": [{"tool_name": "<svg onload=x>", "tool_input": {"k": PAYLOAD}}]}


def polite(prompt):
    return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": "on " in prompt}}]}


@pytest.fixture(scope="module")
def page():
    cmp = lf.compare(CASES, {"polite": polite, "<i>hostile</i>": hostile}, METRICS, progress=False)
    return render_report(cmp)


def test_report_has_exactly_one_script_element_its_own(page):
    assert len(re.findall(r"<script\b", page, flags=re.IGNORECASE)) == 1


def test_agent_response_error_tool_and_name_are_escaped(page):
    assert "<img" not in page and "<svg onload" not in page and "<i>hostile" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "&lt;i&gt;hostile&lt;/i&gt;" in page


def test_report_needs_no_network(page):
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page


def test_report_has_a_chart_per_metric_with_intervals(page):
    charts = re.findall(r'<div class="chart" data-metric="([^"]+)">', page)
    assert charts == METRICS
    assert page.count('class="whisker"') >= 3


def test_report_states_how_failed_runs_were_scored(page):
    assert "1 failed run" in page and "scores <b>0</b>" in page


def test_single_agent_report_has_no_pairwise_section():
    cmp = lf.compare(CASES, {"polite": polite}, METRICS, progress=False)
    html = render_report(cmp)
    assert 'id="summary"' in html and 'id="pairwise"' not in html


def test_to_html_writes_the_file(tmp_path):
    cmp = lf.compare(CASES, {"polite": polite}, METRICS, progress=False)
    path = lf.report.write(cmp, tmp_path / "sub" / "r.html")
    assert path.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_a_report_of_more_cases_than_it_shows_puts_the_ones_that_differ_or_failed_first(monkeypatch):
    from levelfield.report import cases as report_cases

    cases = [{"case_id": f"c{i}", "prompt": f"Schalte Gerät {i} aus / 关掉设备{i}", "reference": f"aus {i}"} for i in range(12)]

    def steady(prompt):
        return f"aus {prompt.split()[2]}"

    def shaky(prompt):
        n = int(prompt.split()[2])
        if n == 9:
            raise RuntimeError("Gerät nicht erreichbar")
        return f"aus {n}" if n not in (3, 7) else "an"

    cmp = lf.compare(cases, {"steady": steady, "shaky": shaky}, ["exact_match"], progress=False, retries=0)
    monkeypatch.setattr(report_cases, "REPORT_CASES", 5)
    page = render_report(cmp)
    shown = re.findall(r'<details class="case" id="case-(c\d+)"', page)
    assert shown == ["c0", "c1", "c3", "c7", "c9"]  # the 3 that differ or failed, then the first others, in order
    assert "5 of 12 cases are shown" in page
    monkeypatch.setattr(report_cases, "REPORT_CASES", 12)
    page = render_report(cmp)
    assert len(re.findall(r'<details class="case"', page)) == 12 and "cases are shown" not in page
