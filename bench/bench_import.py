"""Benchmark: what starting levelfield costs, beside what importing pandas costs.

Each command runs in a fresh Python process (so nothing is cached in ``sys.modules``), 7 times,
interleaved; the median wall time of each is printed with its ratio to ``import pandas``:

- ``import levelfield``;
- ``import pandas`` (the yardstick: the heaviest dependency levelfield has);
- ``levelfield --version`` (``python -m levelfield --version``, the command line's start);
- ``python -c pass`` (the interpreter alone, for reference).

Run from the repository root: ``python bench/bench_import.py [--runs 7]``.
"""

from __future__ import annotations

import argparse
import compileall
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
    # levelfield's modules as an installed package has them (compiled once), even in a shell with
    # PYTHONDONTWRITEBYTECODE=1, where every process would compile them from source again.
    compileall.compile_dir(str(ROOT / "levelfield"), quiet=1)
    for args in COMMANDS.values():  # warm the file cache and the .pyc files once
        wall(args, env)
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    load = os.getloadavg()[0]
    for _ in range(runs):  # interleaved: a change of load on a shared machine hits every command alike
        for name, args in COMMANDS.items():
            walls[name].append(wall(args, env))
    medians = {name: statistics.median(values) for name, values in walls.items()}
    pandas = medians["import pandas"]
    print(f"median of {runs} interleaved fresh processes each ({sys.executable}); "
          f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'command':<24}{'seconds':>10}{'/ import pandas':>18}")
    for name, seconds in medians.items():
        print(f"{name:<24}{seconds:>10.3f}{seconds / pandas:>18.2f}")


if __name__ == "__main__":
    main()
