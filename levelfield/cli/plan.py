"""``levelfield plan``: how many cases an evaluation needs to detect a change, from assumed numbers
or from what a saved comparison measured."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import UsageError, number, positive, probability, share

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    plan = sub.add_parser("plan", help="how many cases an evaluation needs to detect a change")
    kind = plan.add_mutually_exclusive_group(required=True)
    kind.add_argument("--p0", type=share(what=" (a rate, e.g. 0.80)"), help="a 0/1 metric: its current rate (e.g. 0.80)")
    kind.add_argument("--sd", type=number(0, above=True),
                      help="a continuous metric: SD of the per-case differences (paired) or of the metric (--unpaired)")
    kind.add_argument("--from", dest="from_dir", metavar="DIR",
                      help="measure p0, the discordance or SD, and the intra-case correlation from a saved comparison "
                           "(two agents, or a run and its baseline); with --metric")
    plan.add_argument("--metric", "-m", help="with --from: the metric to plan for")
    plan.add_argument("--baseline", metavar="AGENT",
                      help="with --from: the agent of the saved comparison to plan against (default: the baseline it "
                           "was saved with; between two agents without one, the second)")
    plan.add_argument("--agent", metavar="AGENT",
                      help="with --from: the agent whose change is to be detected (needed with more than two agents)")
    plan.add_argument("--mde", type=number(0, above=True), required=True, help="the change to detect, in the metric's units (0.05 = 5 points)")
    plan.add_argument("--power", type=share(what=" (e.g. 0.8)"), default=0.8, help="chance of detecting it (default 0.8)")
    plan.add_argument("--alpha", type=probability, default=0.05, help="significance level (default 0.05)")
    plan.add_argument("--one-sided", action="store_true", help="only a drop matters (default: two-sided)")
    plan.add_argument("--unpaired", action="store_true", help="the agents run on different cases (default: the same cases)")
    plan.add_argument("--discordance", type=share(what=" (a share of cases)"),
                      help="paired 0/1: share of cases where the two agents disagree (default: as if independent)")
    plan.add_argument("--trials", type=positive, default=1, help="runs of every case (default 1)")
    plan.add_argument("--icc", type=share(open_low=False, open_high=False), default=0.5,
                      help="with --trials: intra-case correlation of a case's trials, 0..1 (default 0.5)")
    plan.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``plan``: the cases needed, from assumed numbers or (``--from``) a saved comparison."""
    from .._core.stats.planning import minimum_detectable_effect, sample_size

    if args.from_dir:
        return _plan_from(args)
    if args.baseline or args.agent:
        raise UsageError("--baseline and --agent pick agents of a saved comparison: use them with --from DIR")

    options = dict(p0=args.p0, sd=args.sd, paired=not args.unpaired, discordance=args.discordance, alpha=args.alpha,
                   power=args.power, alternative="one-sided" if args.one_sided else "two-sided", trials=args.trials,
                   icc=args.icc)
    plan = sample_size(mde=args.mde, **options)
    per = " per agent" if args.unpaired else ""
    what = (f"a change of {args.mde * 100:g} points from {args.p0 * 100:g}%" if args.p0 is not None
            else f"a change of {args.mde:g} (SD {args.sd:g})")
    print(f"levelfield plan: {plan.cases} cases{per} ({plan.runs} runs per agent) to detect {what} "
          f"with {args.power:.0%} power at alpha {args.alpha:g} ({plan.alternative}); {plan.design}.")
    if plan.assumptions:
        print(f"Assumes: {plan.assumptions}.")
    grid = sorted({max(2, plan.cases // 2), plan.cases, plan.cases * 2})
    scale, unit = (100, " points") if args.p0 is not None else (1, "")
    print("Smallest change detectable at other sizes: " + ", ".join(
        f"{n} cases: {minimum_detectable_effect(n, **options) * scale:.3g}{unit}" for n in grid))
    return 0


def _plan_from(args: argparse.Namespace) -> int:
    """``plan --from DIR --metric M``: the next run's size from what a saved comparison measured."""
    from ..comparison._comparison import Comparison
    from ..gate import plan_from

    if not args.metric:
        raise UsageError("plan --from DIR needs --metric (the metric to plan for)")
    if args.unpaired or args.discordance is not None:
        raise UsageError("plan --from measures a paired design; leave out --unpaired and --discordance")
    directory = Path(args.from_dir)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (expected the --out folder of eval or compare)")
    cmp = Comparison.load(directory)
    _check_plan_agents(args, cmp, directory)
    trials = args.trials if args.trials > 1 else None
    plan, measured = plan_from(cmp, args.metric, mde=args.mde, power=args.power, alpha=args.alpha,
                               alternative="one-sided" if args.one_sided else "two-sided", trials=trials,
                               baseline=args.baseline, agent=args.agent)
    found = (f"p0 {measured.p0:.2f}, discordance {measured.discordance:.2f}" if measured.binary
             else f"SD of differences {measured.sd:.3g}")
    icc = f", intra-case correlation {measured.icc:.2f}" if measured.icc is not None else ""
    print(f"Measured in {directory} ({measured.cases} cases, {measured.trials} trial(s)): {found}{icc}.")
    unit = f"{args.mde * 100:g} points" if measured.binary else f"{args.mde:g}"
    print(f"levelfield plan: {plan.cases} cases ({plan.runs} runs per agent) to detect a change of {unit} on "
          f"{args.metric} with {args.power:.0%} power at alpha {args.alpha:g} ({plan.alternative}); {plan.design}.")
    return 0


def _check_plan_agents(args: argparse.Namespace, cmp: Comparison, directory: Path) -> None:
    """``--baseline`` and ``--agent`` name agents of the saved comparison; more than two need them."""
    agents = list(cmp.agents)
    listed = ", ".join(agents)
    for flag, name in (("--baseline", args.baseline), ("--agent", args.agent)):
        if name is not None and name not in agents:
            raise UsageError(f"{flag} {name}: not an agent of {directory} ({listed})")
    if args.baseline is not None and args.baseline == args.agent:
        raise UsageError(f"--baseline and --agent are both {args.baseline!r}: plan one agent against another")
    saved = cmp.baseline.name if cmp.baseline is not None else cmp.saved_baseline if cmp.saved_baseline in agents else None
    base = args.baseline or saved
    if base is None and len(agents) > 2:
        raise UsageError(f"{directory} compares {len(agents)} agents ({listed}): name the one to plan against "
                         "with --baseline AGENT and the other with --agent AGENT")
    others = [a for a in agents if a != base]
    if base is not None and args.agent is None and len(others) > 1:
        raise UsageError(f"which agent to plan against {base!r}? give --agent AGENT, one of: {', '.join(others)}")
