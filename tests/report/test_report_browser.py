"""The HTML report in real headless Chromium, driven over the DevTools protocol.

Skipped when no Chromium is installed (``.ci/run`` installs Debian's ``chromium``).
Set ``LEVELFIELD_SCREENSHOT=path.png`` to keep a screenshot of the rendered report.
"""

import asyncio
import base64
import os
from pathlib import Path

import pytest

import levelfield as lf
from _browser import CHROMIUM, NO_CHROMIUM, Cdp, chromium

pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)]
websockets = pytest.importorskip("websockets", reason="the browser test talks to Chromium with websockets")

PAYLOAD = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"
METRICS = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match", "trajectory_precision",
           "trajectory_recall", "rouge_l_sum", "bleu", "exact_match"]
AGENTS = 8  # polite, hostile and six more with long names: the widest layout must hold at 1400 px and at 900 px
WIDTH = 1400
NARROW = 900
CASES = [
    {"case_id": "lights_on", "prompt": "turn on the light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "lights_off", "prompt": "turn off the light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
    {"case_id": "greet", "prompt": "say hi", "reference": "hi", "reference_trajectory": []},
]


def polite(prompt):
    if "light" in prompt:
        return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": " on " in prompt}}]}
    return "hi"


def hostile(prompt):
    if "off" in prompt:
        raise RuntimeError(f"crashed {PAYLOAD}")
    return {"response": PAYLOAD, "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": PAYLOAD}}]}


CHECKS = {
    "ready": "document.documentElement.getAttribute('data-report-ready')",
    "charts": "document.querySelectorAll('.chart svg').length",
    "bars": "document.querySelectorAll('.chart svg rect.bar').length",
    "chart_width": "Math.round(document.querySelector('.chart svg').getBoundingClientRect().width)",
    "pwned": "String(window.__pwned)",
    "injected_elements": "document.querySelectorAll('main script, main img').length",
    "response_text": "Array.from(document.querySelectorAll('pre.response')).map(e => e.textContent).join('\\n')",
    "summary_agents": "document.querySelectorAll('#summary table.summary thead th').length - 1",
    "cases": "document.querySelectorAll('details.case').length",
}
# Every element that is wider than its box (a table cut off, a column pushed out), and the page itself.
OVERFLOW = """(() => {
  const bad = [];
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth) bad.push('page');
  document.querySelectorAll('.tablewrap, .col, pre, .chart, details.case, section, .grid').forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1) bad.push((e.className || e.tagName) + ':' + e.scrollWidth + '>' + e.clientWidth);
  });
  return bad.join(', ');
})()"""
# Agent cards of the first case per row of the drill-down, top to bottom.
DRILL_ROWS = """(() => {
  const rows = {};
  document.querySelectorAll('details.case')[0].querySelectorAll('.grid > .col').forEach(e => {
    const top = Math.round(e.getBoundingClientRect().top);
    rows[top] = (rows[top] || 0) + 1;
  });
  return Object.keys(rows).map(Number).sort((a, b) => a - b).map(k => rows[k]).join(',');
})()"""
# Words (split at spaces, hyphens, underscores, dots and slashes) that a line break cuts in two, after
# every case is expanded. Code-like text (responses, tool calls, error messages) may wrap anywhere.
MID_WORD = r"""(() => {
  const bad = [];
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let node;
  while ((node = walker.nextNode())) {
    const el = node.parentElement;
    if (!el || el.closest('pre, ol.calls, .emsg, svg') || !el.getClientRects().length) continue;
    const words = /[^\s\-_./]+[\-_./]?/g;
    let m;
    while ((m = words.exec(node.textContent))) {
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) bad.push(m[0]);
    }
  }
  return Array.from(new Set(bad)).join(' | ');
})()"""
FILTER = """(() => {
  const box = document.getElementById('case-search');
  box.value = 'greet';
  box.dispatchEvent(new Event('input'));
  return Array.from(document.querySelectorAll('details.case')).filter(e => !e.hidden).map(e => e.id).join(',');
})()"""


async def _inspect(ws_url, page_url, width=WIDTH):
    async with websockets.connect(ws_url, max_size=None) as ws:
        cdp = Cdp(ws)
        target = await cdp.send("Target.createTarget", {"url": "about:blank"})
        session = (await cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}))["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            await cdp.send(f"{domain}.enable", session=session)
        await cdp.send("Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": 1800, "deviceScaleFactor": 1, "mobile": False}, session)
        await cdp.load(lambda: cdp.send("Page.navigate", {"url": page_url}, session), session)
        found = {name: await cdp.evaluate(expr, session) for name, expr in CHECKS.items()}
        found["filtered"] = await cdp.evaluate(FILTER, session)
        await cdp.evaluate("document.getElementById('case-search').value='';"
                           "document.getElementById('case-search').dispatchEvent(new Event('input'));"
                           "document.getElementById('expand-all').click()", session)
        found["overflow"] = await cdp.evaluate(OVERFLOW, session)
        found["mid_word"] = await cdp.evaluate(MID_WORD, session)
        found["drill_rows"] = await cdp.evaluate(DRILL_ROWS, session)
        shot = await cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
        found["screenshot"] = base64.b64decode(shot["data"])
        found["errors"] = cdp.errors()
        return found


@pytest.fixture(scope="module")
def browser_view(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    agents = {"polite": polite, "hostile": hostile, "polite-as-well-with-a-long-name": polite,
              "another-polite-agent-named-at-length": polite,
              **{f"polite-copy-number-{i}-with-a-long-name": polite for i in range(AGENTS - 4)}}
    cmp = lf.compare(CASES, agents, METRICS, trials=2, progress=False)
    report = lf.report.write(cmp, tmp / "report.html")
    with chromium(tmp / "profile") as ws_url:
        found = asyncio.run(_inspect(ws_url, report.as_uri()))
        found["narrow"] = asyncio.run(_inspect(ws_url, report.as_uri(), NARROW))
    if os.environ.get("LEVELFIELD_SCREENSHOT"):
        Path(os.environ["LEVELFIELD_SCREENSHOT"]).write_bytes(found["screenshot"])
    return found


def test_report_renders_and_its_script_runs(browser_view):
    assert browser_view["ready"] == "1"
    assert browser_view["summary_agents"] == AGENTS and browser_view["cases"] == 3


def test_report_has_a_drawn_chart_per_metric(browser_view):
    assert browser_view["charts"] == len(METRICS)
    assert browser_view["bars"] == AGENTS * len(METRICS)
    assert browser_view["chart_width"] > 100


def test_report_logs_no_console_errors(browser_view):
    assert browser_view["errors"] == []


def test_agent_response_with_script_shows_as_text_and_does_not_run(browser_view):
    assert browser_view["pwned"] == "undefined"
    assert browser_view["injected_elements"] == 0
    assert "<script>window.__pwned = 1</script>" in browser_view["response_text"]


def test_case_filter_hides_cases_that_do_not_match(browser_view):
    assert browser_view["filtered"] == "case-greet"


def test_nothing_overflows_at_1400_px_with_eight_agents_and_trials_expanded(browser_view):
    assert browser_view["overflow"] == ""


def test_nothing_overflows_at_900_px_with_eight_agents_and_trials_expanded(browser_view):
    assert browser_view["narrow"]["overflow"] == ""


def test_no_word_breaks_inside_at_900_px(browser_view):
    assert browser_view["narrow"]["mid_word"] == ""


def test_no_word_breaks_inside_at_1400_px(browser_view):
    assert browser_view["mid_word"] == ""


def test_drill_down_lays_eight_agents_in_two_full_rows(browser_view):
    assert browser_view["drill_rows"] == "4,4"


def test_screenshot_is_a_png(browser_view):
    assert browser_view["screenshot"].startswith(b"\x89PNG")
