"""Yes/no verdicts: the label a judge gave read from its answer, and a row's score from each turn's samples."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..._core.score.metrics.base import Score
from ..answers import json_objects
from ..client import JudgeReply
from ..metrics import cost_columns
from ..probability import pass_probability
from .base import _turn_scores_row, _Unread

__all__ = ["label_row"]

_VALID_WORDS = {"valid": 1.0, "true": 1.0, "yes": 1.0, "safe": 1.0, "invalid": 0.0, "false": 0.0, "no": 0.0,
                "almost": 0.0, "partially_valid": 0.0, "partially valid": 0.0, "partially": 0.0, "unsafe": 0.0}


def _label_value(text: str | None, parsed: Mapping[str, Any] | None, keys: Sequence[str], inverted: Sequence[str] = ()) -> float | None:
    """1.0 / 0.0 for the label a judge gave under one of ``keys`` (``inverted`` keys mean the opposite), else None.

    Read from the structured answer, a JSON object in the text, or a ``"key": value`` line in text
    that is not valid JSON (trailing commas, bracketed values), as judges often write it.
    """
    text = text or ""
    if parsed:
        found = _labels_in([parsed], keys, inverted)
        if found:
            return found[0]
    # Every JSON object in the text that gives a label: two that disagree are no verdict (None), never the last one's.
    found = _labels_in(json_objects(text), keys, inverted)
    if not found:
        for key in (*keys, *inverted):
            for match in re.finditer(rf'"?{re.escape(key)}"?\s*:\s*\[?\s*"?([A-Za-z_ ]+?)"?\s*\]?\s*[,\n}}]', text + "\n",
                                     re.IGNORECASE):
                value = _word_value(match.group(1))
                found.append(None if value is None else (1.0 - value if key in inverted else value))
    if not found or any(v is None for v in found) or len(set(found)) > 1:
        return None
    return found[0]


def _labels_in(objects: Sequence[Mapping[str, Any]], keys: Sequence[str], inverted: Sequence[str]) -> list[float | None]:
    """The label each object gives under the first of ``keys``/``inverted`` it holds (None: a word that is no label)."""
    out: list[float | None] = []
    for obj in objects:
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for key in (*keys, *inverted):
            if key in lowered and lowered[key] is not None:
                value = _word_value(lowered[key])
                out.append(None if value is None else (1.0 - value if key in inverted else value))
                break
    return out


def _word_value(token: Any) -> float | None:
    if isinstance(token, bool):
        return 1.0 if token else 0.0
    return _VALID_WORDS.get(str(token).strip().strip("[]\"'").strip().lower())


def _explanation(text: str | None, parsed: Mapping[str, Any] | None) -> str:
    for obj in ([parsed] if parsed else []) + list(reversed(json_objects(text or ""))):
        for key in ("reasoning", "explanation", "rationale", "reason"):
            if isinstance(obj.get(key), str) and obj[key].strip():
                return obj[key].strip()
    return (text or "").strip()


def _majority_label(values: Sequence[float]) -> float:
    """ADK's vote over samples: 1 when more samples say yes than no; a tie is no."""
    yes = sum(1 for v in values if v >= 0.5)
    return 1.0 if yes > len(values) - yes else 0.0


def _label_format(label: str, choices: str, why: str = "reasoning") -> str:
    """The one-line answer format of a yes/no question, with a literal example."""
    return f'a JSON object like {{"{why}": "...", "{label}": {choices.split(" or ")[0]}}} ({label} {choices})'


def label_row(
    replies_by_turn: Sequence[Sequence[JudgeReply]],
    read: Callable[[JudgeReply], float | None],
    num_samples: int,
    words: tuple[str, str],
    labels: Sequence[str] | None = None,
    *,
    expected: str = "a JSON object with a yes/no verdict",
) -> Score:
    """A row's score from each turn's sample replies to a yes/no question (a turn with none was not asked).

    Each turn's verdict is the majority of its readable samples (a tie is no, as in ADK); the row
    scores the share of yes among the turns with a verdict. ``words`` name the no and yes verdicts
    in the explanation, ``labels`` what each question was about (default ``turn 1``, ``turn 2``...).
    Unreadable answers are kept in ``unparsed``; a row with no verdict at all is a judge failure
    (``expected`` names the answer format in its error).
    """
    all_replies = [r for replies in replies_by_turn for r in replies]
    extra, usage = cost_columns(all_replies)
    per_turn: list[float | None] = []
    unread = _Unread()
    reasons: list[str] = []
    shares: list[float] = []
    turn_p: list[float] = []
    for n, replies in enumerate(replies_by_turn, start=1):
        readings = [(r, read(r) if r.error is None else None) for r in replies]
        turn_p.append(_label_probability(readings, words))
        for reply, value in readings:
            if value is None:
                unread.reply(reply)
        values = [v for _, v in readings if v is not None]
        if not values:
            per_turn.append(None)
            continue
        verdict = _majority_label(values)
        per_turn.append(verdict)
        shares.append(sum(1 for v in values if v == verdict) / len(values))
        kept = next(r for r, v in readings if v == verdict)
        label = labels[n - 1] if labels is not None else f"turn {n}"
        reasons.append(f"{label}: {words[int(verdict)]}: {_explanation(kept.text, kept.parsed)}")
    if num_samples > 1 and shares:
        extra["agreement"] = sum(shares) / len(shares)
    # The judge's probability of yes (see judge.probability): the mean over the turns with a verdict,
    # NaN unless every one of them has one.
    judged_p = [p for p, v in zip(turn_p, per_turn) if v is not None]
    extra["p"] = sum(judged_p) / len(judged_p) if judged_p and not any(math.isnan(p) for p in judged_p) else math.nan
    return _turn_scores_row(per_turn, extra, unread, usage, "\n".join(reasons), expected)


_LABEL_KEYS = ("verdict", "is_the_agent_response_valid", "is_valid", "safety", "is_safe")


def _label_probability(readings: Sequence[tuple[JudgeReply, float | None]], words: tuple[str, str]) -> float:
    """One turn's probability of yes: the mean over its readable samples that give one (NaN: none does)."""
    scores = {words[1]: 1.0, words[0]: 0.0, "true": 1.0, "false": 0.0}
    found = [pass_probability(r.text, r.parsed, r.logprobs, scores, v, _LABEL_KEYS)[0] for r, v in readings if v is not None]
    found = [p for p in found if not math.isnan(p)]
    return sum(found) / len(found) if found else math.nan
