"""The report's details: every badge, missing calls in place, failures by type, a glossary, no spoofing, long texts."""

import re

import pytest

import levelfield as lf
from levelfield.report import render as render_report
from levelfield.report.cases import _grid_columns

REF = [{"tool_name": "a", "tool_input": {}}, {"tool_name": "b", "tool_input": {}}, {"tool_name": "c", "tool_input": {}}]
CASES = [
    {"case_id": "three_calls", "prompt": "Schalte das Licht im Büro ein", "reference": "erledigt", "reference_trajectory": REF},
    {"case_id": "kanji", "prompt": "電気をつけて", "reference": "つけました", "reference_trajectory": []},
]
METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum"]
pytestmark = pytest.mark.filterwarnings("ignore::levelfield.AllRunsFailedWarning")


def skips_b(prompt):
    if "Licht" in prompt:
        return {"response": "erledigt", "predicted_trajectory": [{"tool_name": "a"}, {"tool_name": "c"}]}
    return "つけました"


def crashes(prompt):
    if "Licht" in prompt:
        raise TimeoutError("slow tool")
    raise RuntimeError("no kanji support")


@pytest.fixture(scope="module")
def page():
    cmp = lf.compare(CASES, {"skips_b": skips_b, "crashes": crashes}, METRICS, progress=False)
    return render_report(cmp)


def _case(page, case_id):
    start = page.index(f'id="case-{case_id}"')
    return page[start: page.index("</details>", start)]


def test_case_row_shows_a_badge_for_every_metric_of_every_agent(page):
    summary = re.search(r"<summary>(.*?)</summary>", _case(page, "kanji"), flags=re.S).group(1)
    assert summary.count('class="chip') == len(METRICS) * 2


def test_missing_reference_call_is_shown_at_its_place_in_the_reference_order(page):
    calls = re.findall(r'<li class="(match|missing|extra|mismatch)"><span class="tag">[^<]*</span>([a-z])\(',
                       _case(page, "three_calls"))
    assert calls == [("match", "a"), ("missing", "b"), ("match", "c")]


def test_failures_table_counts_error_types_per_agent(page):
    section = page[page.index('id="failures"'): page.index('id="cases"')]
    rows = re.findall(r'<span class="etype">([^<]+)</span></td><td class=num>(\d+)</td>', section)
    assert sorted(rows) == [("RuntimeError", "1"), ("TimeoutError", "1")]


def test_each_failed_run_shows_its_error_type_and_message(page):
    case = _case(page, "kanji")
    assert '<span class="etype">RuntimeError</span>' in case and "no kanji support" in case


def test_no_failures_section_when_nothing_failed():
    cmp = lf.compare(CASES, {"skips_b": skips_b}, METRICS, progress=False)
    assert 'id="failures"' not in render_report(cmp)


def test_every_metric_has_a_glossary_entry_linked_from_the_summary(page):
    for metric in METRICS:
        assert f'<dt id="glossary-{metric}">{metric}</dt><dd>' in page
        assert f'href="#glossary-{metric}"' in page[page.index('id="summary"'): page.index('id="charts"')]


def test_custom_metric_gets_a_glossary_line():
    metric = lf.metrics.CustomMetric(name="has_answer", metric_function=lambda row: {"has_answer": 1.0})
    cmp = lf.compare(CASES, {"skips_b": skips_b}, [metric], progress=False)
    assert re.search(r'<dt id="glossary-has_answer">has_answer</dt><dd>A custom metric', render_report(cmp))


def test_bidi_override_characters_are_shown_as_marks_not_applied():
    def spoof(prompt):
        return "\u202egnp.exe\u2066 done\u2069"

    cmp = lf.compare(CASES, {"admin\u202enimda": spoof}, METRICS, progress=False)
    page = render_report(cmp)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", page)
    assert "admin[U+202E]nimda" in page and "[U+202E]gnp.exe[U+2066] done[U+2069]" in page


def test_a_ten_megabyte_response_is_shortened_with_its_full_length_shown():
    def verbose(prompt):
        return "设" * 10_000_000

    cmp = lf.compare(CASES[:1], {"verbose": verbose}, METRICS, progress=False)
    page = render_report(cmp)
    assert len(page) < 1_000_000
    assert "shortened: 10,000,000 characters in full" in page


@pytest.mark.parametrize("agents, columns", [(2, 2), (3, 3), (4, 4), (5, 3), (6, 3), (7, 4), (8, 4)])
def test_drill_down_lays_agents_out_in_even_rows_of_at_most_four(agents, columns):
    assert _grid_columns(agents) == columns
