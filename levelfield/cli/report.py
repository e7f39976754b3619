"""``levelfield report``: re-render the HTML report of a saved run, or sum up a watch folder."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import UsageError

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``report`` command and its options."""
    rep = sub.add_parser("report", help="re-render the HTML report of a saved run, or sum up a watch folder")
    rep.add_argument("directory", help="the --out directory of eval or compare (an HTML report), or of watch (windows, "
                                       "trends, alerts and the worst traces, printed)")
    rep.add_argument("--out", "-o", metavar="FILE", help="where to write the report (default: DIR/report.html)")
    rep.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``report``: the HTML report of a saved run re-rendered, or a watch folder summed up."""
    from .. import report
    from ..comparison._comparison import Comparison
    from ..comparison._text import format_comparison

    directory = Path(args.directory)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (expected the --out directory of eval, compare or watch)")
    from ..watch.summary import is_watch_folder

    if is_watch_folder(directory):
        from .watch import print_watch_report

        return print_watch_report(str(directory))
    tables = [n for n in ("metrics_table.parquet", "metrics_table.jsonl") if (directory / n).exists()]
    if tables and not (directory / "runs.jsonl").exists():
        raise UsageError(
            f"{directory}: holds saved predictions scored batch by batch ({tables[0]}, summary.json), "
            "which keep scores but no runs to report on; read the table with pandas, or write the full record "
            "with lf.evaluate(...).save(DIR) (runs.jsonl, explanations included) for a report"
        )
    cmp = Comparison.load(directory)
    if cmp.missing_runs:
        print(_missing_note(directory, cmp.missing_runs, cmp), file=sys.stderr)
    path = report.write(cmp, args.out or directory / "report.html")
    print(format_comparison(cmp))
    print()
    print(f"Report: {path}")
    return 0


def _missing_note(directory: Path, missing: Sequence[tuple[str, str, int]], cmp: Comparison) -> str:
    shown = "; ".join(f"{a} on case {c!r}" + (f" trial {t + 1}" if cmp.trials > 1 else "") for a, c, t in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    total = len(cmp.agents) * len(cmp.dataset) * cmp.trials
    return (
        f"levelfield report: {directory / 'runs.jsonl'} lacks {len(missing)} of {total} runs ({shown}{more}); "
        "the run was interrupted: finish it with the same command and --resume. The report shows the runs it has."
    )
