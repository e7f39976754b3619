"""Dataset checks at scale: 100,000 rows with one repeated case id.

Prints the seconds ``load_dataset`` takes to find and name the duplicate (rows -> cases, then the
id check), and the id check alone (``EvalDataset`` over cases already built). Before the check
was made linear, the 100k-row load took 222 s.

    python bench/bench_dataset.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import time

import levelfield as lf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rows = [{"case_id": f"c{i}", "prompt": f"turn off device_{i}", "reference": "done"} for i in range(args.rows - 1)]
    rows.append({"case_id": "c1", "prompt": "again", "reference": "done"})

    start = time.perf_counter()
    try:
        lf.load_dataset(rows)
    except lf.DatasetError as exc:
        message = str(exc)
    else:
        raise SystemExit("the duplicate was not found")
    load = time.perf_counter() - start
    print(f"{args.rows} rows, one duplicate: load_dataset fails in {load:.3f} s")
    print(f"  message: {message[:120]}")

    cases = [lf.EvalCase(case_id=r["case_id"], prompt=r["prompt"]) for r in rows]
    start = time.perf_counter()
    try:
        lf.EvalDataset(cases)
    except lf.DatasetError:
        pass
    print(f"  the id check alone (EvalDataset over {len(cases)} built cases): {time.perf_counter() - start:.3f} s")

    unique = cases[:-1]
    start = time.perf_counter()
    lf.EvalDataset(unique)
    print(f"  {len(unique)} unique ids pass the check in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
