"""The verdict in words, as the report shows it: it lives in :mod:`levelfield.verdict` (below the
comparison, so the comparison, the CLI and the report all read it); kept here under its old name."""

from ..verdict import MetricVerdict, Verdict, Versus, headline, verdict, verdict_lines, verdicts

__all__ = ["Versus", "MetricVerdict", "Verdict", "verdict", "verdicts", "verdict_lines", "headline"]
