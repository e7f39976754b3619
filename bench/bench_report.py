"""How long the HTML report takes to render, and how big it is, with huge responses (prints figures; not a test).

Three cases: a plain comparison; the same with one 10 MB response (it must be shortened, and
render about as fast); and eight agents (the widest layout). Statistics are computed before the
clock starts (they are cached on the comparison), so the figures are the rendering alone.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import levelfield as lf
from levelfield.report import render_report

METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum", "exact_match"]


def cases(n: int) -> list[dict]:
    return [{"case_id": f"c{i}", "prompt": f"set {i}", "reference": f"set to {i}",
             "reference_trajectory": [{"tool_name": "set", "tool_input": {"v": i}}]} for i in range(n)]


def agent(prompt: str) -> dict:
    v = int(prompt.split()[1])
    return {"response": f"set to {v}", "predicted_trajectory": [{"tool_name": "set", "tool_input": {"v": v}}]}


def huge(prompt: str) -> dict:
    out = agent(prompt)
    if prompt == "set 0":
        out["response"] = "设" * 10_000_000  # 10 million characters (30 MB of UTF-8)
    return out


def measure(label: str, cmp: lf.Comparison, repeat: int = 3) -> None:
    render_report(cmp)  # warm the cached statistics and case views
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        page = render_report(cmp)
        times.append(time.perf_counter() - start)
    print(f"{label:<44} render {min(times) * 1000:8.1f} ms (best of {repeat})   page {len(page.encode()) / 1e6:6.2f} MB")


def browser_seconds(page: str) -> float | None:
    """Wall time for headless Chromium to load ``page`` with every case expanded and screenshot it."""
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if chromium is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        path.write_text(page.replace('<details class="case" ', '<details open class="case" '), encoding="utf-8")
        start = time.perf_counter()
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp}/p",
                        f"--screenshot={tmp}/shot.png", "--window-size=1400,2000", path.as_uri()],
                       capture_output=True, timeout=600, check=False)
        return time.perf_counter() - start


def main() -> None:
    warnings.simplefilter("ignore")
    for n in (100, 1000):
        ds = cases(n)
        measure(f"{n} cases, 2 agents", lf.compare(ds, {"a": agent, "b": agent}, METRICS, progress=False))
        measure(f"{n} cases, 2 agents, one 10 MB response",
                lf.compare(ds, {"a": agent, "b": huge}, METRICS, progress=False))
        measure(f"{n} cases, 8 agents",
                lf.compare(ds, {f"agent-{i}": agent for i in range(8)}, METRICS, progress=False), repeat=1)
    page = render_report(lf.compare(cases(100), {"a": agent, "b": huge}, METRICS, progress=False))
    seconds = browser_seconds(page)
    if seconds is not None:
        print(f"{'Chromium: 100 cases, 10 MB response, all expanded':<44} load+screenshot {seconds:6.2f} s "
              "(Chromium's own start-up included)")


if __name__ == "__main__":
    main()
