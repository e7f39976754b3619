"""How ``levelfield view`` copes with a large run: index a 100,000-case record, page and filter it.

Prints figures (no assertion): time to index the record the first time, to read on after 1,000
more runs are appended, to serve a page of cases, a filtered page, one case's transcript, and
the memory the process holds. Run: ``python bench/bench_view.py [cases]``.
"""

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import levelfield as lf
from levelfield.view import create_app


def write_record(folder: Path, cases: int) -> Path:
    """A real record of 3 cases, its header, case and run lines repeated to ``cases`` cases."""
    small = [{"case_id": f"c{i}", "prompt": f"turn on light {i}", "reference": "done",
              "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]} for i in range(3)]
    lf.evaluate(small, lambda p: {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
                ["trajectory_exact_match", "rouge_l_sum"], out=folder / "seed", progress=False)
    lines = (folder / "seed" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    header, case, run = json.loads(lines[0]), json.loads(lines[1]), json.loads(lines[4])
    header["dataset"]["cases"] = cases
    path = folder / "big" / "runs.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for i in range(cases):
            case["case"]["case_id"] = f"case-{i}"
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
        for i in range(cases):
            run["case_id"] = run["run"]["case_id"] = f"case-{i}"
            run["scores"]["trajectory_exact_match"]["value"] = float(i % 7 != 0)
            f.write(json.dumps(run, ensure_ascii=False) + "\n")
    return path


def timed(label, fn):
    start = time.perf_counter()
    out = fn()
    print(f"{label:<44} {time.perf_counter() - start:8.3f} s")
    return out


def main(cases: int) -> None:
    from starlette.testclient import TestClient

    with tempfile.TemporaryDirectory() as tmp:
        path = timed(f"write a record of {cases:,} cases", lambda: write_record(Path(tmp), cases))
        print(f"{'record size':<44} {path.stat().st_size / 1e6:8.1f} MB")
        client = TestClient(create_app([Path(tmp)], allowed_hosts=["testserver"]))
        big = f"{Path(tmp).name}/big"  # a run's id: its folder below the served folder's parent
        timed("runs list (indexes every record)", lambda: client.get("/"))
        page = timed("a page of cases", lambda: client.get("/run", params={"run": big, "page": 500}))
        assert page.status_code == 200
        timed("cases below 0.5 on a metric, page 2", lambda: client.get(
            "/run", params={"run": big, "metric": "trajectory_exact_match", "below": 0.5, "page": 2}))
        timed("text search", lambda: client.get("/run", params={"run": big, "q": "case-9999"}))
        timed("one case's transcript", lambda: client.get("/case", params={"run": big, "case": f"case-{cases // 2}"}))
        lines = path.read_text(encoding="utf-8").splitlines()[-1000:]
        with path.open("a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        timed("read on after 1,000 appended runs", lambda: client.get("/run", params={"run": big}))
    print(f"{'peak memory of this process':<44} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
