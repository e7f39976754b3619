"""A judge's probability of a pass: from the answer itself or from the log-probabilities of its verdict token.

A binary judged metric keeps, beside the verdict, ``<metric>/p``: the judge's probability that the
row passes (that the rating is the rubric's higher one). It is read, in this order, from

1. a number in the answer (a decision model's probability, or a judge asked for one): a
   ``probability`` (also ``p``, ``prob``, ``p_pass``, ``pass_probability``) field is the probability
   of a pass; a ``confidence`` field is the probability of the verdict given (so ``{"verdict": "no",
   "confidence": 0.9}`` is p = 0.1). Either may be written ``0.83`` or ``"83%"``;
2. the log-probabilities of the verdict token, where the chat model returns them: OpenAI's
   ``response_metadata["logprobs"]`` (``ChatOpenAI(..., logprobs=True, top_logprobs=5)``), Gemini's
   ``logprobs_result`` (google-genai with ``response_logprobs=True, logprobs=5``), or any LangChain
   model whose ``AIMessage.response_metadata`` carries either shape. The token where the verdict
   starts is found in the answer; the probability mass of its alternatives that begin a passing
   rating, over the mass of those that begin any rating, is p.

A judge that gives neither (a verdict only) has p = NaN; nothing else about it changes. A
function judge may return, instead of text, a dict (written to the answer as JSON), a LangChain
message, or a google-genai ``GenerateContentResponse`` (its text and log-probabilities are read).
Nothing here calls a judge.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .answers import json_objects

__all__ = [
    "TokenLogprob",
    "JudgeAnswer",
    "token_logprobs",
    "as_judge_answer",
    "stated_probability",
    "verdict_probability",
    "pass_probability",
]

_PASS_KEYS = ("probability", "p", "prob", "p_pass", "pass_probability")
_CONFIDENCE_KEYS = ("confidence",)
_VERDICT_KEYS = ("score", "rating", "grade", "verdict", "result")
_TRIM = " \t\r\n*_`'\"[](){}.,;:"


def _verdict_at(keys: Sequence[str]) -> re.Pattern[str]:
    """Where a verdict's value starts: after ``"<key>": "`` (or ``key: ``, ``key=``)."""
    return re.compile(r"""["']?\b(?:""" + "|".join(map(re.escape, keys)) + r""")\b["']?\s*[:=]\s*[\s"'\[(*_`]*""",
                      re.IGNORECASE)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the alternatives the model listed for that place."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    """(token, log-probability) of the most likely tokens at this place (the chosen one usually among them)."""


@dataclass
class JudgeAnswer:
    """A judge's answer that is more than text: what a function judge returned, read as a chat message."""

    content: str
    response_metadata: dict[str, Any] = field(default_factory=dict)


def _number(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def token_logprobs(metadata: Any) -> list[TokenLogprob] | None:
    """The tokens of an answer with their log-probabilities, from a message's ``response_metadata``
    (OpenAI's ``logprobs`` or Gemini's ``logprobs_result``), or None when it has none."""
    if not isinstance(metadata, Mapping):
        return None
    openai = metadata.get("logprobs")
    if isinstance(openai, Mapping):
        openai = openai.get("content")
    if isinstance(openai, Sequence) and not isinstance(openai, str) and openai:
        out = []
        for item in openai:
            if not isinstance(item, Mapping) or not isinstance(item.get("token"), str):
                return None
            lp = _number(item.get("logprob"))
            if lp is None:
                return None
            top = tuple((str(t.get("token")), float(t["logprob"])) for t in item.get("top_logprobs") or []
                        if isinstance(t, Mapping) and _number(t.get("logprob")) is not None)
            out.append(TokenLogprob(item["token"], lp, top))
        return out
    gemini = metadata.get("logprobs_result") or metadata.get("logprobsResult")
    if isinstance(gemini, Mapping):
        chosen = gemini.get("chosen_candidates") or gemini.get("chosenCandidates") or []
        tops = gemini.get("top_candidates") or gemini.get("topCandidates") or []
        out = []
        for i, item in enumerate(chosen):
            lp = _number(item.get("log_probability", item.get("logProbability"))) if isinstance(item, Mapping) else None
            if lp is None or not isinstance(item.get("token"), str):
                return None
            listed = tops[i].get("candidates") if i < len(tops) and isinstance(tops[i], Mapping) else None
            top = tuple((str(c.get("token")), float(_number(c.get("log_probability", c.get("logProbability"))) or 0.0))
                        for c in listed or [] if isinstance(c, Mapping)
                        and _number(c.get("log_probability", c.get("logProbability"))) is not None)
            out.append(TokenLogprob(item["token"], lp, top))
        return out or None
    return None


def as_judge_answer(answer: Any) -> Any:
    """What a function judge returned, as something with ``content`` (and ``response_metadata``):
    text and chat messages as they are; a dict as its JSON; a google-genai response as its text and
    log-probabilities. Anything else is returned unchanged (the caller says it is not an answer)."""
    if isinstance(answer, str) or hasattr(answer, "content"):
        return answer
    if isinstance(answer, Mapping):
        return JudgeAnswer(json.dumps(dict(answer), ensure_ascii=False, default=str))
    candidates = getattr(answer, "candidates", None)
    if candidates is not None and hasattr(answer, "text"):  # google-genai GenerateContentResponse
        metadata: dict[str, Any] = {}
        result = getattr(candidates[0], "logprobs_result", None) if candidates else None
        if result is not None:
            metadata["logprobs_result"] = result.model_dump() if hasattr(result, "model_dump") else result
        return JudgeAnswer(answer.text or "", metadata)
    return answer


def _fraction(value: Any) -> tuple[float | None, str | None]:
    """A probability as written (0.83, "0.83", "83%"): (value, None), or (None, why it is not one)."""
    if isinstance(value, str) and value.strip().endswith("%"):
        number = _number(value.strip()[:-1])
        number = None if number is None else number / 100
    else:
        number = _number(value)
    if number is None or math.isnan(number):
        return None, f"the probability {value!r} is not a number"
    if not 0 <= number <= 1:
        return None, (f"the probability {value!r} is outside [0, 1]; the judge must give a fraction "
                      "(0.83, or \"83%\" as text)")
    return number, None


def _field(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in keys:
        if lowered.get(key) is not None:
            return lowered[key]
    return None


def stated_probability(
    text: str | None, parsed: Mapping[str, Any] | None, passed: bool
) -> tuple[float | None, str | None]:
    """The probability of a pass the answer states itself (see the module docs), or (None, None)
    when it states none, or (None, the problem) when it states one that is not a probability.
    ``passed``: whether the verdict read from the answer is a pass (for a ``confidence``)."""
    objects: list[Mapping[str, Any]] = [parsed] if parsed is not None else []
    objects += list(reversed(json_objects(text or "")))
    for obj in objects:
        value = _field(obj, _PASS_KEYS)
        if value is not None:
            return _fraction(value)
        value = _field(obj, _CONFIDENCE_KEYS)
        if value is not None:
            p, problem = _fraction(value)
            return (None, problem) if p is None else (p if passed else 1 - p, None)
    return None, None


def _rating_of(token: str, ratings: Sequence[str]) -> str | None:
    """The one rating ``token`` begins (a token is often part of a word), or None."""
    text = token.strip(_TRIM).lower()
    if not text:
        return None
    exact = [r for r in ratings if r.lower() == text]
    if exact:
        return exact[0]
    begun = [r for r in ratings if r.lower().startswith(text)]
    return begun[0] if len(begun) == 1 else None


def verdict_probability(
    tokens: Sequence[TokenLogprob], scores: Mapping[str, float], verdict: float, keys: Sequence[str] = _VERDICT_KEYS
) -> float | None:
    """P(pass) from the log-probabilities of the token where the verdict starts, or None when the
    verdict's token cannot be found or does not agree with the verdict read from the text.

    ``scores``: the rubric's ratings and their scores (two distinct values); ``verdict``: the score
    read from the answer; ``keys``: the answer's fields the verdict may be under. The alternatives
    listed at that place that begin a rating share the mass.
    """
    high = max(scores.values())
    ratings = list(scores)
    text = "".join(t.token for t in tokens)
    found = list(_verdict_at(keys).finditer(text))
    if found:
        offset = found[-1].end()
    elif text.strip() and len(text.strip()) <= 24:
        offset = len(text) - len(text.lstrip(_TRIM))
    else:
        return None
    start = 0
    for item in tokens:
        end = start + len(item.token)
        if start <= offset < end or (start == offset and end == offset):
            break
        start = end
    else:
        return None
    cut = offset - start
    lead = item.token[:cut]
    chosen = _rating_of(item.token[cut:], ratings)
    if chosen is None or scores[chosen] != verdict:
        return None
    listed = dict(item.top)
    listed.setdefault(item.token, item.logprob)
    mass = {True: 0.0, False: 0.0}
    for token, lp in listed.items():
        if not token.startswith(lead):
            continue
        rating = _rating_of(token[cut:], ratings)
        if rating is not None:
            mass[scores[rating] == high] += math.exp(lp)
    if len(listed) == 1:  # only the chosen token's own probability: the rest is the other verdict's
        own = math.exp(item.logprob)
        return own if verdict == high else 1 - own
    total = mass[True] + mass[False]
    return mass[True] / total if total > 0 else None


def pass_probability(
    text: str | None,
    parsed: Mapping[str, Any] | None,
    tokens: Sequence[TokenLogprob] | None,
    scores: Mapping[str, float],
    verdict: float,
    keys: Sequence[str] = _VERDICT_KEYS,
) -> tuple[float, str | None]:
    """One answer's probability of a pass: stated in the answer, else from its log-probabilities, else
    NaN; with the problem when the answer states something that is not a probability."""
    passed = verdict == max(scores.values())
    p, problem = stated_probability(text, parsed, passed)
    if p is not None or problem is not None:
        return (math.nan if p is None else p), problem
    if tokens:
        found = verdict_probability(tokens, scores, verdict, keys)
        if found is not None:
            return found, None
    return math.nan, None
