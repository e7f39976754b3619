"""``levelfield view`` in real headless Chromium, driven over the DevTools protocol.

The user's path of the issue: three evaluations, ``levelfield view``, in the browser find the case
that regressed between the first and the last run, see both transcripts side by side and why it
scored lower. Plus a filter, a case transcript, no console error, no request outside the server,
and markup in every field of a hostile run shown as text.
Skipped when no Chromium is installed (``.ci/run`` installs Debian's ``chromium``).
Set ``LEVELFIELD_SCREENSHOT=dir`` to keep a screenshot of each page visited.
"""

import asyncio
import base64
import os
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

import levelfield as lf
from _browser import CHROMIUM, NO_CHROMIUM, Cdp, chromium
from _view_runs import three_runs, written_at

pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)]
websockets = pytest.importorskip("websockets", reason="the browser test talks to Chromium with websockets")
pytest.importorskip("starlette", reason="levelfield view needs the view extra")

from levelfield.view import start  # noqa: E402

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
HOSTILE_FOLDER = '<svg onload="window.__pwned = 3">'


def hostile(prompt):
    if "crash" in prompt:
        raise RuntimeError(f"crashed {PAYLOAD}")
    return {"response": PAYLOAD, "predicted_trajectory": [
        {"tool_name": f"tool{PAYLOAD}", "tool_input": {PAYLOAD: PAYLOAD}, "tool_output": PAYLOAD, "agent": PAYLOAD}]}


def hostile_run(root):
    cases = [{"case_id": f"case{PAYLOAD}", "prompt": f"ask {PAYLOAD}", "reference": PAYLOAD,
              "reference_trajectory": [{"tool_name": PAYLOAD, "tool_input": {"k": PAYLOAD}}]},
             {"case_id": "crash", "prompt": "crash", "reference": "x", "reference_trajectory": []}]
    lf.compare(cases, {f"agent{PAYLOAD}": hostile}, ["trajectory_exact_match", "rouge_l_sum"],
               out=root / HOSTILE_FOLDER, progress=False)


class Browser:
    """One tab: go to pages, act on them, wait for the page an action loads; every request and error kept."""

    def __init__(self, cdp, session, shots):
        self.cdp, self.session, self.shots = cdp, session, shots

    async def load(self, action):
        await self.cdp.load(action, self.session)
        if self.shots:
            shot = await self.cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, self.session)
            name = (await self.js("location.pathname + location.search")).strip("/").replace("/", "_") or "runs"
            (Path(self.shots) / f"{len(list(Path(self.shots).iterdir())):02d}-{name[:60]}.png").write_bytes(base64.b64decode(shot["data"]))

    async def goto(self, url):
        await self.load(lambda: self.cdp.send("Page.navigate", {"url": url}, self.session))

    async def click(self, expression):
        """Run ``expression`` (which clicks or submits) and wait for the page it leads to."""
        await self.load(lambda: self.js(expression))

    async def js(self, expression):
        return await self.cdp.evaluate(expression, self.session)

    def requests(self):
        return [e["params"]["request"]["url"] for e in self.cdp.events if e.get("method") == "Network.requestWillBeSent"]


async def user_path(ws_url, base, shots):
    import websockets

    found = {}
    async with websockets.connect(ws_url, max_size=None) as ws:
        cdp = Cdp(ws)
        target = await cdp.send("Target.createTarget", {"url": "about:blank"})
        session = (await cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}))["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            await cdp.send(f"{domain}.enable", session=session)
        await cdp.send("Emulation.setDeviceMetricsOverride",
                       {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session)
        b = Browser(cdp, session, shots)

        # The runs list: four runs; pick the first as A and the last as B, and diff.
        await b.goto(base + "/")
        found["ready"] = await b.js("document.documentElement.getAttribute('data-view-ready')")
        found["runs"] = await b.js("Array.from(document.querySelectorAll('tr[data-run]')).map(r => r.dataset.run).sort().join(',')")
        await b.click("document.querySelector('input[name=a][value=\"runs/v1\"]').click();"
                      "document.querySelector('input[name=b][value=\"runs/v3\"]').click();"
                      "document.getElementById('diff-button').click()")
        found["diff_url"] = await b.js("location.pathname + location.search")
        found["worst"] = await b.js("document.querySelector('#metric-trajectory_exact_match a.diffcase').textContent")
        found["verdicts"] = await b.js("Array.from(document.querySelectorAll('table.changes td.verdict')).map(e => e.textContent).join('|')")

        # The regressed case: both transcripts side by side, and why B scored lower.
        await b.click("document.querySelector('#metric-trajectory_exact_match a.diffcase').click()")
        found["columns"] = await b.js("Array.from(document.querySelectorAll('.runcol h4')).map(e => e.textContent).join('|')")
        found["answers"] = await b.js("Array.from(document.querySelectorAll('.runcol .step.answer pre')).map(e => e.textContent).join('|')")
        found["side_by_side"] = await b.js(
            "(() => { const [a, b] = document.querySelectorAll('.runcol'); const ra = a.getBoundingClientRect(), "
            "rb = b.getBoundingClientRect(); return Math.abs(ra.top - rb.top) < 2 && rb.left >= ra.right; })()")
        found["why_b"] = await b.js("document.querySelector('#why tbody tr').lastElementChild.textContent")
        found["b_marks"] = await b.js("Array.from(document.querySelectorAll('.side.b .step.call')).map(e => e.className).join('|')")
        found["page_overflow"] = await b.js("document.documentElement.scrollWidth > document.documentElement.clientWidth")

        # A filter on the first run: failed runs only.
        await b.goto(base + "/run?run=runs%2Fv1")
        found["report_charts"] = await b.js("document.querySelectorAll('.chart svg rect.bar').length")
        await b.click("document.querySelector('#case-filters input[name=failed]').click();"
                      "document.querySelector('#case-filters button[type=submit]').click()")
        found["filtered"] = await b.js("Array.from(document.querySelectorAll('a.caselink')).map(e => e.textContent).join(',')")
        found["filter_url"] = await b.js("location.search")

        # A case transcript, reached from the filtered list.
        await b.click("document.querySelector('a.caselink').click()")
        found["steps"] = await b.js("Array.from(document.querySelectorAll('.step')).map(e => e.className).join('|')")
        found["reference"] = await b.js("document.querySelector('.col.reference').textContent")

        # The hostile run: every page, markup shown as text and never run.
        hostile_id = "runs/" + HOSTILE_FOLDER
        from urllib.parse import urlencode
        for path in ("/", "/run?" + urlencode({"run": hostile_id}),
                     "/case?" + urlencode({"run": hostile_id, "case": f"case{PAYLOAD}"}),
                     "/case?" + urlencode({"run": hostile_id, "case": "crash"}),
                     "/diff/case?" + urlencode({"a": hostile_id, "b": hostile_id, "case": f"case{PAYLOAD}"})):
            await b.goto(base + path)
            found.setdefault("pwned", []).append(await b.js("String(window.__pwned)"))
            found.setdefault("injected", []).append(await b.js("document.querySelectorAll('main script, main img, main svg:not(.bars)').length"))
        found["payload_text"] = await b.js("document.body.textContent.includes('<script>window.__pwned = 1</script>')")

        # One poll of the page's script (every 2 s), to see its request too.
        await cdp.wait_until(lambda events: any("/api/version" in url for url in b.requests()))
        found["requests"] = b.requests()
        found["errors"] = cdp.errors()
    return found


@pytest.fixture(scope="module")
def visit(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("view-browser")
    root = three_runs(tmp / "runs")
    for second, version in enumerate(("v1", "v2", "v3")):  # a second apart, as on a slow machine: listed v3, v2, v1
        written_at(root / version, f"2026-01-01T00:00:0{second}+00:00")
    hostile_run(root)
    shots = os.environ.get("LEVELFIELD_SCREENSHOT")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
    with start([root]) as server, chromium(tmp / "profile") as ws_url:
        found = asyncio.run(user_path(ws_url, server.url, shots))
        found["base"] = server.url
    return found


def test_runs_list_renders_every_run_and_its_script_runs(visit):
    assert visit["ready"] == "1"
    assert visit["runs"] == ",".join(sorted(["runs/v1", "runs/v2", "runs/v3", "runs/" + HOSTILE_FOLDER]))


def test_diff_of_first_and_last_run_lists_the_regressed_case_first(visit):
    # The form lists a and b in the order of the runs' rows: newest first, by the second each run was written in.
    path, _, query = visit["diff_url"].partition("?")
    assert path == "/diff" and sorted(parse_qsl(query)) == [("a", "runs/v1"), ("b", "runs/v3")]
    assert visit["worst"] == "lights_on"
    assert visit["verdicts"].split("|") == ["no significant change"] * 3  # five cases: too few to call it


def test_regressed_case_shows_both_transcripts_side_by_side(visit):
    assert visit["columns"] == "A · runs/v1|B · runs/v3"
    assert visit["answers"] == "The kitchen light is on.|I switched on the hall light."
    assert visit["side_by_side"] is True
    assert visit["page_overflow"] is False


def test_regressed_case_says_why_it_scored_lower(visit):
    assert "args differ" in visit["why_b"]
    assert visit["b_marks"] == "step call match|step call mismatch"


def test_run_page_serves_the_report_and_filters_failed_runs(visit):
    assert visit["report_charts"] == 3
    assert visit["filtered"] == "thermostat"
    assert visit["filter_url"] == "?run=runs%2Fv1&failed=1"  # empty filters left out of the link


def test_case_transcript_step_by_step_with_the_reference(visit):
    assert visit["steps"].split("|") == ["step user", "step call missing", "step error"]
    assert "set_temperature" in visit["reference"]


def test_markup_in_every_field_is_shown_as_text_and_never_runs(visit):
    assert visit["pwned"] == ["undefined"] * 5
    assert visit["injected"] == [0] * 5
    assert visit["payload_text"] is True


def test_no_console_errors(visit):
    assert visit["errors"] == []


def test_no_request_leaves_the_server(visit):
    assert visit["requests"], "the browser made no request at all"
    outside = [u for u in visit["requests"] if not u.startswith(visit["base"] + "/") and not u.startswith("data:")]
    assert outside == []
    assert any(u.startswith(visit["base"] + "/api/version") for u in visit["requests"])
