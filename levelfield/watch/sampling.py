"""Which traces are scored: a share of them chosen by trace id, and per-route rules.

``sample=0.1`` scores one trace in ten. A rule ``KEY=PATTERN:RATE`` (``--sample-rule``) gives the
traces it matches a rate of their own; rules are tried in order, the first that matches wins, and
a trace no rule matches gets ``sample``. As in Datadog's sampling rules and the OpenTelemetry
Collector's tail sampling (``string_attribute`` policies), a rule matches an attribute of the
trace, and PATTERN is a glob (``*`` and ``?``; ``/checkout*``). KEY is an attribute key of any
span of the trace or of its resource (``http.route``, ``tenant.id``), or a short name:

- ``route``: ``http.route`` (the route of the HTTP server span);
- ``agent``: ``gen_ai.agent.name`` (any agent in the trace);
- ``service``: ``service.name`` (the resource of any span);
- ``name``: the root span's name (for traces from MLflow, its trace name).

A short name also matches an attribute of that very name (an MLflow tag ``route``, an inference
table's ``route`` column). Traces from MLflow offer their tags and metadata as attributes, rows
of a trace file their metadata columns.

Within a rate, the trace id alone decides (its low 64 bits, as OpenTelemetry's
``TraceIdRatioBased`` sampler does), so a trace gets the same answer in any request and after a
restart. A rule's attribute may sit on the root span, which ends (and is exported) last, so with
rules a trace is put together first and decided once complete; only the spans of traces that no
rate could keep (the highest of them) are dropped as they arrive.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.errors import ConfigError
from ..formats.spans import Span

__all__ = ["SampleRule", "Sampler", "sampled", "span_attributes", "mapping_attributes", "ROOT_NAME"]

_TOP = float(1 << 64)
ROOT_NAME = "name"
"""The key of the root span's name among a trace's attributes."""
SHORT_KEYS = {"route": "http.route", "agent": "gen_ai.agent.name", "service": "service.name"}
_FORM = ("expected KEY=PATTERN:RATE, e.g. 'route=/checkout:1.0' or 'agent=support*:0.05' (KEY: route, agent, "
         "service, name, or a span attribute such as http.route; PATTERN: a value, * and ? match any; RATE: the "
         "share to score, between 0 and 1)")

Attributes = Mapping[str, Iterable[str]]
"""A trace's attributes: key -> every value it takes on the trace's spans (and their resources)."""


def sampled(trace_id: str, rate: float) -> bool:
    """Whether ``trace_id`` is in a ``rate`` sample: decided by the id alone (its low 64 bits, as
    OpenTelemetry's ``TraceIdRatioBased`` sampler does), so every span of a trace, in any request,
    before or after a restart, gets the same answer."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    try:
        return int(trace_id[-16:], 16) < rate * _TOP
    except ValueError:
        return hash(trace_id) % 1_000_000 < rate * 1_000_000


@dataclass(frozen=True)
class SampleRule:
    """One per-route rule: the traces whose ``key`` takes a value matching ``pattern`` are scored at ``rate``."""

    key: str
    """The attribute key as given (``route``, ``http.route``, ``name``, ...)."""
    pattern: str
    rate: float
    text: str
    """The rule as it was given (named in errors and in the windows' header)."""

    @classmethod
    def parse(cls, text: str) -> SampleRule:
        """A rule from ``KEY=PATTERN:RATE``; a ConfigError naming the rule and the expected form."""
        if not isinstance(text, str):
            raise ConfigError(f"sample rule {text!r}: {_FORM}")
        condition, colon, rate_text = text.strip().rpartition(":")
        key, equals, pattern = condition.partition("=")
        key, pattern = key.strip(), pattern.strip()
        if not colon or not equals or not key or not pattern:
            raise ConfigError(f"sample rule {text!r}: {_FORM}")
        try:
            rate = float(rate_text)
        except ValueError:
            raise ConfigError(f"sample rule {text!r}: the rate {rate_text.strip()!r} is not a number; {_FORM}") from None
        if not (math.isfinite(rate) and 0 <= rate <= 1):
            raise ConfigError(f"sample rule {text!r}: the rate {rate_text.strip()} is not between 0 and 1; {_FORM}")
        return cls(key, pattern, rate, text)

    @property
    def keys(self) -> tuple[str, ...]:
        """The attribute keys the rule reads: a short name spelled out, and as it is."""
        return (SHORT_KEYS[self.key], self.key) if self.key in SHORT_KEYS else (self.key,)

    def matches(self, attributes: Attributes) -> bool:
        return any(fnmatch.fnmatchcase(value, self.pattern) for key in self.keys for value in attributes.get(key, ()))


class Sampler:
    """The sampling decision of the watcher: ``rate`` for every trace, or the first matching rule's."""

    def __init__(self, rate: float, rules: Sequence[str | SampleRule] = ()) -> None:
        if isinstance(rules, str):
            rules = [rules]
        self.rate = float(rate)
        self.rules = [r if isinstance(r, SampleRule) else SampleRule.parse(r) for r in rules]
        self.highest = max([self.rate, *(r.rate for r in self.rules)])
        self.keys: frozenset[str] = frozenset(k for r in self.rules for k in r.keys) - {ROOT_NAME}
        """The attribute keys the rules read (kept on each span as it is decoded)."""

    @property
    def deferred(self) -> bool:
        """Whether the decision waits for the trace's attributes (there are rules)."""
        return bool(self.rules)

    def may_keep(self, trace_id: str) -> bool:
        """False when no rate could keep the trace: its spans need not be kept."""
        return sampled(trace_id, self.highest)

    def rate_for(self, attributes: Attributes) -> float:
        """The rate of the first rule the attributes match, else the default rate."""
        for rule in self.rules:
            if rule.matches(attributes):
                return rule.rate
        return self.rate

    def keep(self, trace_id: str, attributes: Attributes | None = None) -> bool:
        """Whether to score the trace with these attributes."""
        if not self.rules:
            return sampled(trace_id, self.rate)
        return sampled(trace_id, self.rate_for(attributes or {}))

    def describe(self) -> list[str]:
        return [r.text for r in self.rules]


def span_attributes(spans: Iterable[Span]) -> dict[str, set[str]]:
    """The attributes of a trace the rules can match: each kept attribute's values over its spans,
    every agent's name, and the root span's name."""
    out: dict[str, set[str]] = {}
    ordered = sorted(spans, key=lambda s: s.start)
    ids = {s.span_id for s in ordered}
    root = next((s for s in ordered if not s.parent_id or s.parent_id not in ids), None)
    if root is not None:
        out[ROOT_NAME] = {root.name}
    for span in ordered:
        for key, value in (span.extra.get("attributes") or {}).items():
            out.setdefault(key, set()).update(_texts(value))
        if span.agent_name:
            out.setdefault("gen_ai.agent.name", set()).add(str(span.agent_name))
    return out


def mapping_attributes(*mappings: Mapping[str, Any] | None) -> dict[str, set[str]]:
    """Attributes from flat mappings (MLflow trace tags and metadata, a dataset row's metadata)."""
    out: dict[str, set[str]] = {}
    for mapping in mappings:
        for key, value in (mapping or {}).items():
            texts = _texts(value)
            if texts:
                out.setdefault(str(key), set()).update(texts)
    return out


def _texts(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if isinstance(v, (str, int, float, bool))]
    if isinstance(value, (str, int, float, bool)):
        return [str(value)]
    return []
