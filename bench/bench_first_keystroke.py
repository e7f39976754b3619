"""Issue #46 "Fast from the first keystroke", side by side in one run.

1. import time (``bench_import``: fresh processes, beside ``import pandas``);
2. end-to-end saved-row scoring beside google-adk at 1,000, 5,000, 20,000 and 100,000 rows, by
   every route (``evaluate(path)``, ``evaluate(df)``, ``evaluate(load_dataset(path))``), trajectory
   metrics and ROUGE-1, each in a fresh process, with peak memory (``bench_routes``);
3. the text metrics beside rouge-score and sacrebleu row by row (``bench_text_metrics``);
4. the runner with and without its journal against the bare-asyncio floor (``bench_runner``).

Each part is its own script, run here one after the other with the machine's load printed
before each; the figures of one part are taken interleaved, so a load change hits its variants alike.

    python bench/bench_first_keystroke.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def part(title: str, script: str, *args: str) -> None:
    print(f"\n=== {title} (load average {os.getloadavg()[0]:.2f}) ===", flush=True)
    done = subprocess.run([sys.executable, str(HERE / script), *args], check=False)
    if done.returncode != 0:
        print(f"{script} failed (exit {done.returncode})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 100,000-row step")
    args = parser.parse_args()
    repeats = "1" if args.quick else "3"
    part("import", "bench_import.py", "--runs", "3" if args.quick else "7")
    part("saved rows by every route vs google-adk", "bench_routes.py", "--sizes", "1000,5000,20000",
         "--repeats", repeats, "--adk-subset", "5000")
    if not args.quick:
        part("saved rows at 100,000 (peak memory by route)", "bench_routes.py", "--sizes", "100000",
             "--repeats", "1", "--adk-subset", "5000")
    part("text metrics vs rouge-score and sacrebleu", "bench_text_metrics.py", "--sizes", "1000,20000",
         "--repeats", repeats)
    part("runner with and without journal", "bench_runner.py", "--no-vertex", "--repeats", "3" if args.quick else "5")


if __name__ == "__main__":
    main()
