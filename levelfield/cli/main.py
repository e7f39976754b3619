"""The ``levelfield`` command: builds the parser from each command's module and runs the one asked for.

Commands: demo, eval, compare, report, plan, view, watch, serve (from the A2A adapter), a2a-check,
judge-check; each module under ``levelfield/cli/`` declares its command (``add_parser``) and runs it.

Exit codes: 0 done; 1 a ``--fail-under`` threshold was missed, ``--fail-if-worse`` found a
significant regression against ``--baseline``, every run of an agent failed (unless
``--allow-failures``), or most rows of a judged metric failed because no parser could read the
judge's answers (``--judge``); 2 bad input (agent spec, dataset, metric, option, saved run, an ``--out``
folder of other files, a ``--metric`` whose reference column no case has), reported as one line
on stderr, before any agent runs, or a gate that cannot decide (``--require-certified-judge`` with
a judge not certified against ``--human-labels``; ``judge-check`` tells why). Warnings (a reference
some cases lack, an agent that never called a tool, a resumed journal whose references or metrics
changed) print as ``levelfield CMD: warning: ...`` lines and do not change the exit code.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from . import a2a_check, compare, demo, judge_check, limits, plan, report, view, watch
from . import eval as eval_command
from .arguments import UsageError, http_url, port
from .interrupt import RUNS_AGENTS, interrupted_note, terminate_as_interrupt

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand (each command module's packages load only when it runs)."""
    from .. import __version__
    from ..adapters.a2a.server import add_serve_command  # light: imports a2a only when serving

    parser = argparse.ArgumentParser(prog="levelfield", description="Evaluate AI agents on a level field.")
    parser.add_argument("--version", action="version", version=f"levelfield {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (demo, eval_command, compare, report, plan, view, watch):
        command.add_parser(sub)
    add_serve_command(sub, port_reader=port, url_reader=http_url)  # the A2A adapter's command
    for command in (a2a_check, judge_check, limits):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    from .._core.errors import LevelfieldError

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    terminated: list[int] = []
    try:
        with terminate_as_interrupt(terminated, args.command in RUNS_AGENTS):
            return args.func(args)
    except (UsageError, LevelfieldError) as exc:
        print(f"levelfield {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_note(args, argv, "terminated (SIGTERM)" if terminated else "interrupted"), file=sys.stderr)
        return 128 + signal.SIGTERM if terminated else 130


if __name__ == "__main__":
    sys.exit(main())
