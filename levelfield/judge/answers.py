"""Reading a judge's answers: ratings and A/B/tie preferences out of free text or structured output.

:func:`parse_rating` and :func:`parse_preference` find the verdict in whatever the judge wrote (a
structured answer, a JSON object in the text, a ``score: X`` line, or a bare rating) and give None
rather than a guess when there is none. :func:`preference_label` reads one A/B/tie label.
Nothing here calls a judge or knows about metrics.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["parse_rating", "parse_preference", "preference_label", "is_numeric_rating", "json_objects"]

_SCORE_KEYS = ("score", "rating", "grade", "verdict", "result")
_WINNER_KEYS = ("winner", "verdict", "preferred", "better", "choice", "preference", "result")
_EXPLANATION_KEYS = ("explanation", "rationale", "reasoning", "reason", "justification", "analysis")
_TRIM = " \t\r\n*_`'\"[](){}.,;:"


_CONTRADICTED = object()
"""What the text says when its JSON answers disagree: no reading."""


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object embedded in ``text`` (fenced or not), in order."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


def _labelled_line(text: str, labels: Sequence[str]) -> str | None:
    """The value of the last ``<label>: value`` line (markdown emphasis allowed), e.g. ``**Score:** 4``."""
    pattern = re.compile(
        r"^[\s>#*_\-]*(?:final\s+|overall\s+)?(?:" + "|".join(labels) + r")\b[\s*_]*(?:\([^)\n]*\))?[\s*_]*[:=]"
        r"[\s*_`'\"\[(]*(?:(?:response|agent|assistant|answer|option)\s+)?([^\s*_`'\"\])]+)",
        re.IGNORECASE | re.MULTILINE,
    )
    matches = pattern.findall(text)
    return matches[-1] if matches else None


def _explanation_of(obj: Mapping[str, Any], text: str) -> str:
    for key in _EXPLANATION_KEYS:
        for k, v in obj.items():
            if k.lower() == key and v not in (None, ""):
                return v if isinstance(v, str) else json.dumps(v, default=str)
    return text.strip()


def _get_ci(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered and lowered[key] is not None:
            return lowered[key]
    return None


def is_numeric_rating(text: str) -> bool:
    """Whether a rubric rating (or a judge's token) is a finite number, e.g. ``"4"`` or ``"0.5"``."""
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def _rating_value(token: Any, scores: Mapping[str, float] | None) -> float | None:
    """The score a rating stands for; None when it is not one of the rubric's ratings."""
    if isinstance(token, bool):
        token = int(token)
    text = str(token).strip(_TRIM)
    if "/" in text:  # "4/5": a rating out of its scale's top
        top = text.split("/", 1)[1].strip(_TRIM)
        text = text.split("/")[0].strip(_TRIM)
        # "1/0" is no rating out of anything, and "7/5" none of a 5-point scale: unreadable, not its numerator.
        if not (is_numeric_rating(top) and is_numeric_rating(text) and 0 <= float(text) <= float(top) and float(top) > 0):
            return None
        numeric = [float(k) for k in (scores or {}) if is_numeric_rating(k)]
        if numeric and float(top) != max(numeric):
            return None
    if scores is None:
        return float(text) if is_numeric_rating(text) else None
    for key, value in scores.items():
        if key.strip().lower() == text.lower():
            return value
    if is_numeric_rating(text):
        for key, value in scores.items():
            if is_numeric_rating(key) and float(key) == float(text):
                return value
    return None


def _structured_candidates(
    text: str, parsed: Mapping[str, Any] | None, keys: Sequence[str]
) -> list[tuple[Any, Mapping[str, Any]]]:
    """The answer's value under ``keys`` from the structured output, then from the last JSON object
    in the text that has one: (value, the object it came from), most trusted first."""
    candidates: list[tuple[Any, Mapping[str, Any]]] = []
    if parsed is not None:
        candidates.append((_get_ci(parsed, keys), parsed))
    said = [(token, obj) for obj in reversed(json_objects(text)) if (token := _get_ci(obj, keys)) is not None]
    if len({str(token).strip(_TRIM).lower() for token, _ in said}) > 1:
        # Two JSON answers that disagree ({"score": 5} ... {"score": 1}) are no one verdict: unreadable.
        candidates.append((_CONTRADICTED, {}))
    elif said:
        candidates.append(said[0])
    return candidates


def parse_rating(
    text: str | None, scores: Mapping[str, float] | None, parsed: Mapping[str, Any] | None = None
) -> tuple[float, str] | None:
    """(score, explanation) from a judge's answer, or None when it gives no valid rating.

    Reads, in order: the structured answer; the last JSON object with a score key in the text;
    the last ``score: X`` / ``rating: X`` line; an answer that is nothing but a rating.
    ``scores`` maps rubric ratings to scores (None: any number is a score). A rating outside the
    rubric is not a score (never guessed, never 0).
    """
    text = text or ""
    candidates = _structured_candidates(text, parsed, _SCORE_KEYS)
    line = _labelled_line(text, _SCORE_KEYS)
    if line is not None:
        candidates.append((line, {}))
    if text.strip() and len(text.strip()) <= 24:
        candidates.append((text.strip(), {}))
    for token, obj in candidates:
        if token is None:
            continue
        if token is _CONTRADICTED:
            return None
        value = _rating_value(token, scores)
        # The first rating found decides: a later, valid-looking one would be a guess.
        return (value, _explanation_of(obj, text)) if value is not None else None
    return None


def preference_label(token: Any) -> str | None:
    """``"A"``, ``"B"`` or ``"tie"`` for a pairwise label as judges write it (``"Response B"``, ``"SAME"``, ``"2"``...), else None."""
    text = str(token).strip(_TRIM).lower()
    text = re.sub(r"^(response|agent|assistant|answer|option)[\s_]+", "", text)
    if text in ("a", "1", "first"):
        return "A"
    if text in ("b", "2", "second"):
        return "B"
    if text in ("tie", "same", "equal", "draw", "both", "neither", "c", "none"):
        return "tie"
    return None


def parse_preference(text: str | None, parsed: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """("A" | "B" | "tie", explanation) from a pairwise judge's answer, or None when it names no winner."""
    text = text or ""
    candidates = _structured_candidates(text, parsed, _WINNER_KEYS)
    bracketed = re.findall(r"\[\[\s*([A-Za-z]+)\s*\]\]", text)
    if bracketed:
        candidates.append((bracketed[-1], {}))
    line = _labelled_line(text, _WINNER_KEYS)
    if line is not None:
        candidates.append((line, {}))
    if text.strip() and len(text.strip()) <= 24:
        candidates.append((text.strip(), {}))
    for token, obj in candidates:
        if token is None:
            continue
        choice = preference_label(token)
        return (choice, _explanation_of(obj, text)) if choice is not None else None
    return None
