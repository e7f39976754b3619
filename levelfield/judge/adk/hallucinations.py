"""ADK's ``hallucinations_v1``: the answer split into sentences, each labelled against the context."""

from __future__ import annotations

import re
from typing import Any

from ..._core.errors import ConfigError
from ..._core.score.metrics.base import Score, ScoringContext, TurnContext
from ..client import JudgeReply
from ..metrics import cost_columns
from .base import _TEXT_ONLY, AdkJudged, _turn_scores_row, _Unread
from .turns import _calls_json, _own

__all__ = ["Hallucinations", "HALLUCINATION_EXPECTED"]

_SEGMENT_PROMPT = """# Task
Split the text below into its sentences so that each can be checked on its own.
- Copy every sentence exactly as written; do not change, add or drop any words.
- A bullet or numbered item is its own sentence; so is each sub-item. A table stays whole, as one sentence.
- Skip pieces that are only symbols.

<response>
{response}
</response>

# Your answer
Each sentence on its own line, wrapped as <sentence>...</sentence>, and nothing else."""

_VALIDATE_PROMPT = """# Task
Label each sentence an AI agent wrote by how the context supports it. The context is what the agent was
told and what its tools returned.
- supported: the context clearly entails the sentence.
- unsupported: the context does not entail it (use this whenever the evidence is not plain).
- contradictory: the context says otherwise.
- disputed: the context both supports and contradicts it.
- not_applicable: the sentence needs no evidence (a greeting, an opinion, a question, a plan, arithmetic).
A tool's output counts as evidence only if the call that produced it was sound.

<context>
{context}
</context>

<sentences>
{sentences}
</sentences>

# Your answer
For each sentence, in order, a block of lines and nothing else:
sentence: <the sentence, copied>
label: <supported, unsupported, contradictory, disputed or not_applicable>
rationale: <why, briefly>
supporting_excerpt: <text from the context, or null>
contradicting_excerpt: <text from the context, or null>"""

HALLUCINATION_EXPECTED = (
    "first the sentences, one per line, as '<sentence>It is sunny.</sentence>'; then a block per sentence, "
    "e.g. 'sentence: It is sunny. / label: supported / rationale: the tool says so' (each on its own line; "
    "label supported, unsupported, contradictory, disputed or not_applicable)"
)
"""The two answers ``hallucinations_v1`` reads, in one line with literal examples, as errors and warnings say them."""

_POSITIVE = frozenset({"supported", "not_applicable"})
_NEGATIVE = frozenset({"unsupported", "contradictory", "disputed"})


def _sentences(text: str | None) -> list[str]:
    return [s.strip() for s in re.findall(r"<sentence>(.*?)</sentence>", text or "", re.DOTALL) if s.strip()]


def _labels(text: str | None) -> list[tuple[str, str, str]]:
    """(sentence, label, rationale) of every block of a validator answer that has a known label."""
    blocks: list[dict[str, str]] = []
    for line in (text or "").splitlines():
        match = re.match(r"^[\s*_\-]*(sentence|label|rationale)[\s*_]*:\s*(.*)$", line, re.IGNORECASE)
        if not match:
            continue
        key, value = match.group(1).lower(), match.group(2).strip()
        if key == "sentence" or not blocks:
            blocks.append({})
        blocks[-1].setdefault(key, value)
    out = []
    for block in blocks:
        label = block.get("label", "").strip().strip("`*'\"").lower().replace(" ", "_")
        if label in _POSITIVE or label in _NEGATIVE:
            out.append((block.get("sentence", ""), label, block.get("rationale", "")))
    return out


class Hallucinations(AdkJudged):
    """ADK's ``hallucinations_v1``: the share of the answer's sentences the context supports (or that need no support)."""

    requires = ("response",)
    description = (
        "ADK hallucinations_v1: the judge splits each turn's answer into sentences and labels each against the "
        "context (request, tool calls and outputs); supported and not-applicable sentences count 1, unsupported, "
        "contradictory and disputed 0; turns and the case average the sentence scores."
    )
    default_samples = 1

    def __init__(
        self, judge: Any = None, *, name: str = "hallucinations_v1", evaluate_intermediate_nl_responses: bool = False, **options: Any
    ) -> None:
        # ADK asks this judge once per step (its num_samples is not read either): other samples are refused.
        samples = getattr(options.get("judge_config"), "samples", None)
        if samples not in (None, 1):
            raise ConfigError(f"{name}: JudgeConfig(samples={samples!r}) does not apply: the judge is asked once per "
                              "step of the answer, as ADK does; leave samples unset")
        self._setup(name, judge, options)
        self.with_intermediate = evaluate_intermediate_nl_responses
        self.expected_answer = HALLUCINATION_EXPECTED

    @staticmethod
    def context(turn: TurnContext) -> str:
        """What the sentences are checked against: the request, then each tool call with its output."""
        return f"User's request:\n{turn.prompt}\n\nTool calls and their results:\n{_calls_json(_own(turn.predicted_trajectory))}"

    async def _step(self, text: str, context: str) -> tuple[float | None, list[dict[str, Any]], list[JudgeReply], JudgeReply | None]:
        """(score, labelled sentences, replies, the reply that could not be used) for one piece of the agent's text."""
        (seg,) = await self.ask([_SEGMENT_PROMPT.format(response=text)], _TEXT_ONLY, lambda r: bool(_sentences(r.text)) or None)
        sentences = _sentences(seg.text) if seg.error is None else []
        if not sentences:
            return None, [], [seg], seg
        listed = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        (val,) = await self.ask(
            [_VALIDATE_PROMPT.format(context=context, sentences=listed)],
            _TEXT_ONLY,
            lambda r: len(_labels(r.text)) == len(sentences) or None,
        )
        labels = _labels(val.text) if val.error is None else []
        if len(labels) != len(sentences):
            # A sentence left unlabelled would silently raise the score: the step is unreadable instead.
            return None, [], [seg, val], val
        scored = [{"sentence": s, "label": label, "rationale": why} for s, label, why in labels]
        return sum(label in _POSITIVE for _, label, _ in labels) / len(labels), scored, [seg, val], None

    async def ascore(self, ctx: ScoringContext) -> Score:
        per_turn: list[float | None] = []
        replies: list[JudgeReply] = []
        unread = _Unread()
        sentences: list[dict[str, Any]] = []
        for n, turn in enumerate(ctx.exchanges(), start=1):
            texts = (list(turn.intermediate_responses) if self.with_intermediate else []) + ([turn.response] if turn.response else [])
            steps = []
            for text in texts:
                value, labelled, got, bad = await self._step(text, self.context(turn))
                replies += got
                if bad is not None:
                    unread.reply(bad)
                if value is not None:
                    steps.append(value)
                    sentences += [{"turn": n, **s} for s in labelled]
            per_turn.append(sum(steps) / len(steps) if steps else None)
        extra, usage = cost_columns(replies)
        extra["sentences"] = sentences
        bad_ones = [s for s in sentences if s["label"] in _NEGATIVE]
        explanation = f"{len(sentences) - len(bad_ones)} of {len(sentences)} sentences supported or needing no support"
        explanation += "".join(f"\n{s['label']}: {s['sentence']} ({s['rationale']})" for s in bad_ones)
        return _turn_scores_row(per_turn, extra, unread, usage, explanation, self.expected_answer)
