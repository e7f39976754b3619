"""Rubrics: properties a judge says yes or no to, read from files, shown to the judge, read back and combined.

A :class:`Rubric` is one testable property (an id, its text, an optional type such as
``FINAL_RESPONSE_QUALITY``). :func:`read_rubrics` reads ADK's rubric objects (``rubric_id``,
``rubric_content.text_property``, ``type``), Vertex's (``rubric_id``, ``content.property.description``,
``type``), ``{"id", "property"}`` objects or plain strings. :func:`parse_verdicts` finds one yes/no
verdict per rubric in a judge's answer, written as ``ID: / Property: / Rationale: / Verdict:``
blocks (ADK's layout, which levelfield's prompts ask for too) or as JSON; an answer that leaves a
rubric without a readable verdict is incomplete, never filled in. :func:`combine_samples` takes
the majority verdict of each rubric over several samples (a tie is "no", as in ADK) and says how
much the samples agreed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.errors import MetricError
from .._core.results.criteria import read_keys
from .answers import json_objects

__all__ = [
    "Rubric",
    "Verdict",
    "RubricVerdicts",
    "read_rubrics",
    "check_adk_rubrics",
    "render_rubrics",
    "parse_verdicts",
    "combine_samples",
    "verdict_value",
    "RUBRIC_ANSWER_FORMAT",
    "RUBRIC_EXPECTED",
]


@dataclass(frozen=True)
class Rubric:
    """One property of a good answer that a judge says yes or no to."""

    id: str
    """Unique within the rubrics of one judgement; the judge echoes it."""
    text: str
    """The property, e.g. "The response gives the temperature in Celsius"."""
    type: str | None = None
    """What it is about (``FINAL_RESPONSE_QUALITY``, ``TOOL_USE_QUALITY``, ``TRAJECTORY_QUALITY``...), when given."""

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "property": self.text, **({"type": self.type} if self.type else {})}


@dataclass
class Verdict:
    """A judge's verdict on one rubric."""

    rubric: Rubric
    score: float
    """1.0 yes (the property holds or does not apply), 0.0 no."""
    rationale: str = ""
    agreement: float | None = None
    """Share of samples that gave this verdict (None for one sample)."""
    turn: int | None = None
    """The turn (1-based) the verdict is about; None for a whole conversation."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.rubric.id,
            "property": self.rubric.text,
            "verdict": "yes" if self.score >= 0.5 else "no",
            "score": self.score,
            "rationale": self.rationale,
        }
        if self.turn is not None:
            out["turn"] = self.turn
        if self.agreement is not None:
            out["agreement"] = self.agreement
        return out


@dataclass
class RubricVerdicts:
    """What one sample's answer says: a verdict for each rubric it answered readably, and which it left out."""

    found: dict[str, Verdict] = field(default_factory=dict)
    missing: list[Rubric] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing


def _field(obj: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj and obj[name] is not None:
            return obj[name]
    return None


def _one_rubric(item: Any, index: int, where: str) -> Rubric:
    if isinstance(item, str):
        if not item.strip():
            raise MetricError(f"{where}: rubric {index + 1} is empty")
        return Rubric(id=str(index + 1), text=item.strip())
    if not isinstance(item, Mapping):
        raise MetricError(f"{where}: rubric {index + 1} must be an object or a string, got {type(item).__name__}")
    content = _field(item, "rubric_content", "rubricContent", "content") or {}
    text = _field(item, "property", "text", "description")
    if text is None and isinstance(content, Mapping):
        text = _field(content, "text_property", "textProperty")
        prop = _field(content, "property")
        if text is None and isinstance(prop, Mapping):  # Vertex: content.property.description
            text = _field(prop, "description")
    if not isinstance(text, str) or not text.strip():
        raise MetricError(
            f"{where}: rubric {index + 1} has no text; give rubric_content.text_property (ADK), "
            "content.property.description (Vertex) or 'property'"
        )
    rid = _field(item, "rubric_id", "rubricId", "id")
    kind = _field(item, "type", "rubric_type", "rubricType")
    return Rubric(id=str(rid) if rid is not None else str(index + 1), text=text.strip(), type=str(kind) if kind else None)


def read_rubrics(value: Any, where: str) -> list[Rubric]:
    """Rubrics from a list of ADK or Vertex rubric objects, ``{"id", "property"}`` objects or strings.

    ``where`` names the file, case or criterion in errors. Two rubrics with one id are an error.
    """
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = [value]
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if isinstance(value, Mapping) and "rubrics" in value:  # Vertex's RubricGroup
        value = value["rubrics"]
    if not isinstance(value, (list, tuple)):
        raise MetricError(f"{where}: rubrics must be a list, got {type(value).__name__}")
    rubrics = [_one_rubric(item, i, where) for i, item in enumerate(value)]
    ids = [r.id for r in rubrics]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise MetricError(f"{where}: rubric id {repeated[0]!r} is used twice; rubric ids must be unique")
    return rubrics


_RUBRIC_KEYS = ("rubric_id", "rubric_content", "description", "type")
"""ADK's ``Rubric`` fields."""


def check_adk_rubrics(value: Any, path: str, where: str) -> None:
    """Raise unless ``value`` is a list of rubrics in ADK's shape, as a ``test_config.json`` criterion gives them:
    ``[{"rubric_id": "...", "rubric_content": {"text_property": "..."}, "type": "..."}]``.

    ``path`` is the key path (``criteria.rubric_based_tool_use_quality_v1.rubrics``) and ``where`` the file, for
    errors. Stricter than ADK only in asking each rubric for a text (ADK's ``text_property`` may be left out,
    leaving the judge nothing to judge).
    """
    example = '[{"rubric_id": "cites", "rubric_content": {"text_property": "The answer names its source."}}]'
    if not isinstance(value, (list, tuple)):
        raise MetricError(f"{where}: {path}: rubrics must be a list of rubric objects, got {type(value).__name__}; "
                          f"write e.g. {example}")
    for i, item in enumerate(value):
        at = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise MetricError(f"{where}: {at}: a rubric must be an object, got {type(item).__name__}; write e.g. {example}")
        fields = read_keys(item, _RUBRIC_KEYS, at, where, "The keys of a rubric")
        rid = fields.get("rubric_id")
        if not isinstance(rid, str) or not rid.strip():
            raise MetricError(f"{where}: {at}.rubric_id: every rubric needs a rubric_id, a non-empty string unique "
                              f"among the rubrics; got {rid!r}")
        content = fields.get("rubric_content")
        if not isinstance(content, Mapping):
            raise MetricError(f"{where}: {at}.rubric_content: give an object with the property judged, "
                              f"e.g. {{\"text_property\": \"The answer names its source.\"}}; got {content!r}")
        text = read_keys(content, ("text_property",), f"{at}.rubric_content", where,
                         "The keys of rubric_content").get("text_property")
        if not isinstance(text, str) or not text.strip():
            raise MetricError(f"{where}: {at}.rubric_content.text_property: give the property the judge says yes or "
                              f"no to, as a non-empty string; got {text!r}")
        for key in ("description", "type"):
            if fields.get(key) is not None and not isinstance(fields[key], str):
                raise MetricError(f"{where}: {at}.{key} must be a string, got {fields[key]!r}")


def render_rubrics(rubrics: Sequence[Rubric]) -> str:
    """The rubrics as the judge sees them: one ``[id: X] property`` line each."""
    return "\n".join(f"- [id: {r.id}] {r.text}" for r in rubrics)


RUBRIC_ANSWER_FORMAT = (
    "# Your answer\n"
    "For every property above, in the order given, write one block of four lines and nothing else:\n"
    "ID: <the property's id, as shown in [id: ...]>\n"
    "Property: <the property's text, copied exactly>\n"
    "Rationale: <why, in one or two sentences>\n"
    "Verdict: <yes or no>\n"
    "Answer every property; leave none out."
)
"""The closing section of every rubric prompt: one ID/Property/Rationale/Verdict block per rubric."""

RUBRIC_EXPECTED = (
    "one block of four lines per property, e.g. 'ID: 1 / Property: The answer names the city. / "
    "Rationale: it says Paris. / Verdict: yes' (each on its own line; Verdict yes or no), or a JSON object "
    'like {"verdicts": [{"id": "1", "verdict": "yes"}]}'
)
"""The same answer in one line with a literal example, as errors and warnings say it."""

_SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def _normalized(text: Any) -> str:
    """Text compared loosely: Unicode-normalized, plain quotes, spaces folded, decoration and case ignored."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_SMART)
    return re.sub(r"\s+", " ", text).strip(" *_`#>-\u2022\"'").casefold()


_YES = frozenset({"yes", "true", "pass", "passed", "fulfilled", "met", "valid"})
_NO = frozenset({"no", "false", "fail", "failed", "unfulfilled", "invalid"})


def verdict_value(token: Any) -> float | None:
    """1.0 for a yes, 0.0 for a no (``"Yes."``, ``"**no**"``, ``true``...), None for anything else."""
    if isinstance(token, bool):
        return 1.0 if token else 0.0
    words = re.findall(r"[^\W\d_]+", str(token).casefold())
    if not words:
        return None
    if words[0] in _YES:
        return 1.0
    if words[0] in _NO:
        return 0.0
    return None


_LABEL = re.compile(r"^[\s>*_`#\-\u2022]*(id|property|rationale|evidence|verdict)[\s*_`]*:[\s*_`]*(.*)$", re.IGNORECASE)


def _blocks(text: str) -> list[dict[str, str]]:
    """The ``ID / Property / Rationale / Verdict`` blocks of an answer, in order.

    A new block starts at an ``ID:`` or ``Property:`` line once the current block has its verdict
    or already holds that field; a field's text runs on until the next labelled line.
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last: str | None = None
    for line in text.splitlines():
        match = _LABEL.match(line)
        if match is None:
            if last is not None and line.strip() and last in ("rationale", "evidence"):
                current[last] += " " + line.strip()
            continue
        label, value = match.group(1).lower(), match.group(2).strip().strip("*_`")
        if label in ("id", "property") and ("verdict" in current or label in current):
            blocks.append(current)
            current = {}
        current[label] = value
        last = label
    if current:
        blocks.append(current)
    return [b for b in blocks if "verdict" in b]


def _json_verdicts(text: str, parsed: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Verdict objects from a structured answer or a JSON object/list in the text."""
    sources: list[Any] = [parsed] if parsed is not None else []
    sources += json_objects(text)
    stripped = text.strip().strip("`").removeprefix("json").strip()
    if stripped.startswith("["):
        try:
            sources.append(json.loads(stripped))
        except json.JSONDecodeError:
            pass
    for source in sources:
        items = source
        if isinstance(source, Mapping):
            items = _field(source, "verdicts", "rubric_verdicts", "rubrics", "properties")
        if isinstance(items, list) and all(isinstance(i, Mapping) for i in items) and items:
            return [
                {
                    "id": str(_field(i, "id", "rubric_id") or ""),
                    "property": str(_field(i, "property", "text") or ""),
                    "rationale": str(_field(i, "rationale", "reasoning", "explanation") or ""),
                    "verdict": _field(i, "verdict", "answer", "score"),
                }
                for i in items
            ]
    return []


def parse_verdicts(
    text: str | None, rubrics: Sequence[Rubric], parsed: Mapping[str, Any] | None = None, *, turn: int | None = None
) -> RubricVerdicts:
    """Each rubric's verdict in one judge answer; rubrics it did not answer readably are listed as missing.

    An answer block is matched to its rubric by id, else by the property's text (compared loosely).
    Blocks for rubrics that were not asked about are ignored; the first block of a rubric counts.
    """
    text = text or ""
    items = _json_verdicts(text, parsed) or _blocks(text)
    by_id = {r.id: r for r in rubrics}
    by_text = {_normalized(r.text): r for r in rubrics}
    found: dict[str, Verdict] = {}
    for item in items:
        rid = str(item.get("id") or "").strip().strip("[]").removeprefix("id:").strip()
        rubric = by_id.get(rid) or by_text.get(_normalized(item.get("property")))
        if rubric is None or rubric.id in found:
            continue
        value = verdict_value(item.get("verdict"))
        if value is None:
            continue
        found[rubric.id] = Verdict(rubric, value, str(item.get("rationale") or ""), turn=turn)
    return RubricVerdicts(found, [r for r in rubrics if r.id not in found])


def combine_samples(samples: Sequence[RubricVerdicts], rubrics: Sequence[Rubric]) -> tuple[list[Verdict], float | None]:
    """Each rubric's majority verdict over the complete samples (a tie is "no"), and the samples' agreement.

    The verdict kept is the first sample's verdict that agrees with the majority, so its rationale
    explains it. Agreement is the mean over rubrics of the share of samples that gave the majority
    verdict (None for a single sample). ``samples`` must be complete and non-empty.
    """
    out: list[Verdict] = []
    shares: list[float] = []
    for rubric in rubrics:
        votes = [s.found[rubric.id] for s in samples]
        yes = [v for v in votes if v.score >= 0.5]
        no = [v for v in votes if v.score < 0.5]
        chosen = yes if len(yes) > len(no) else no
        kept = chosen[0]
        share = len(chosen) / len(votes)
        shares.append(share)
        out.append(Verdict(rubric, kept.score, kept.rationale, share if len(votes) > 1 else None, kept.turn))
    agreement = sum(shares) / len(shares) if len(samples) > 1 and shares else None
    return out, agreement
