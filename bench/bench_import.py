"""Benchmark: what starting levelfield costs, beside what importing pandas costs.

Each command runs in a fresh Python process (so nothing is cached in ``sys.modules``), 7 times;
the median wall time of each is printed with its ratio to ``import pandas``:

- ``import levelfield``;
- ``import pandas`` (the yardstick: the heaviest dependency levelfield has);
- ``levelfield --version`` (``python -m levelfield --version``, the command line's start);
- ``python -c pass`` (the interpreter alone, for reference).

Run from the repository root: ``python bench/bench_import.py [--runs 7]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "import levelfield": ["-c", "import levelfield"],
    "import pandas": ["-c", "import pandas"],
    "levelfield --version": ["-m", "levelfield", "--version"],
    "python -c pass": ["-c", "pass"],
}


def wall(args: list[str], env: dict[str, str]) -> float:
    """Seconds one fresh process takes to run ``python *args``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for args in COMMANDS.values():  # warm the file cache and the .pyc files once
        wall(args, env)
    medians = {name: statistics.median(wall(args, env) for _ in range(runs)) for name, args in COMMANDS.items()}
    pandas = medians["import pandas"]
    print(f"median of {runs} fresh processes each ({sys.executable})")
    print(f"{'command':<24}{'seconds':>10}{'/ import pandas':>18}")
    for name, seconds in medians.items():
        print(f"{name:<24}{seconds:>10.3f}{seconds / pandas:>18.2f}")


if __name__ == "__main__":
    main()
