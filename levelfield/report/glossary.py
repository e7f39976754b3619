"""One line per metric saying what it measures, for the report's glossary."""

from __future__ import annotations

from typing import Any

__all__ = ["describe_metric"]

# Our own one-line definitions of the named metrics; anything else falls back to its docstring.
_LINES = {
    "trajectory_exact_match": "1 when the agent made exactly the reference tool calls, in the same order, and no others; else 0.",
    "trajectory_in_order_match": "1 when the reference calls appear in the agent's calls in order (extra calls allowed); else 0.",
    "trajectory_any_order_match": "1 when every reference call was made, in any order (extra calls allowed); else 0.",
    "trajectory_precision": "Share of the agent's tool calls that match a reference call.",
    "trajectory_recall": "Share of the reference tool calls the agent made.",
    "trajectory_single_tool_use": "1 when the agent called the named tool at least once; else 0.",
    "tool_trajectory_avg_score": "ADK's score: per turn 1 when the calls match the reference (EXACT by default), averaged over turns.",
    "exact_match": "1 when the response equals the reference text (surrounding whitespace ignored); else 0.",
    "bleu": "Sentence BLEU of the response against the reference (sacrebleu), from 0 to 1.",
    "rouge_1": "ROUGE-1 F-measure: word overlap between response and reference (rouge-score).",
    "rouge_2": "ROUGE-2 F-measure: overlap of word pairs between response and reference.",
    "rouge_l": "ROUGE-L F-measure: longest common word sequence of response and reference.",
    "rouge_l_sum": "ROUGE-Lsum F-measure: ROUGE-L computed sentence by sentence over the whole response.",
    "response_match_score": "ADK's score: ROUGE-1 F-measure with stemming, averaged over turns.",
}


def describe_metric(metric: Any) -> str:
    """What ``metric`` (an object with a ``name``) measures, in one line."""
    name = getattr(metric, "name", str(metric))
    if name in _LINES:
        return _LINES[name]
    if type(metric).__name__ == "CustomMetric":
        return "A custom metric: the score its metric_function returns for each row."
    doc = (type(metric).__doc__ or "").strip()
    first = doc.splitlines()[0].strip() if doc else ""
    if first and not first.startswith("A metric known only by name"):
        return first
    return "A custom metric; see its definition in the code that ran this evaluation."
