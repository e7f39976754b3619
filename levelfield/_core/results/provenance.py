"""Which evaluator gave a score: each metric's identity, kept in the run record and compared before two runs are.

An :class:`Evaluator` is what decides a metric's scores: the metric's name, class, version and
options and, for a judged metric, its judge (model and settings), the hash of its prompt template
and of its rubric set. Its :attr:`~Evaluator.fingerprint` is a hash of all that; two scores are
comparable when their evaluators have the same fingerprint. A calibration or certification record
(how the judge did against human labels) rides along, outside the fingerprint: certifying a judge
does not change what it measures.

A run record's header keeps one evaluator per metric (``"evaluators": {metric: {...}}``); a record
written before it loads with no evaluators (provenance unknown). :func:`evaluator_differences`
says, per metric, what differs between two runs' evaluators, in words. Judged metrics describe
their judge through ``metric.evaluator_details()`` (see ``levelfield.judge.provenance``); core
never imports the judge package.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..score.metrics.base import Metric, kept_arguments

__all__ = [
    "Evaluator",
    "evaluator_of",
    "evaluators_of",
    "evaluators_from_header",
    "evaluators_json",
    "evaluator_differences",
    "sha256_text",
    "short",
]

# Metric arguments that change how a metric runs, not what it measures, or that are described apart
# (the judge, its prompt template and rubric scores: see the judge fields).
_DESCRIBED_APART = frozenset({"judge", "cache", "max_concurrency", "retries", "backoff", "timeout", "name", "metric",
                              "structured_output", "requests_per_minute", "tokens_per_minute", "adaptive",
                              "metric_prompt_template", "rubric_scores", "rubrics", "judge_config"})


def sha256_text(text: str) -> str:
    """The full hex sha256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def short(digest: str | None) -> str:
    """A hash as the messages show it: its first 8 hex digits and an ellipsis (``none`` when absent)."""
    return "none" if not digest else f"{digest[:8]}…"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Evaluator:
    """What gave a metric's scores; equal :attr:`fingerprint` means comparable scores."""

    metric: str
    """The metric's name."""
    kind: str = ""
    """The metric's class (``module.QualName``)."""
    version: str | None = None
    """The metric's own version, when it declares one (a ``version`` attribute); None otherwise."""
    options: dict[str, Any] = field(default_factory=dict)
    """The metric's arguments that decide its scores (plain data only; how it runs, e.g. retries, left out)."""
    judge_model: str | None = None
    """The judge as people name it (``provider:model``, the model's name, a function's name); None: not judged."""
    judge_settings: dict[str, Any] | None = None
    """The judge model's class and settings (temperature, ...); values of secret-looking settings are hidden."""
    judge_sha256: str | None = None
    """A hash of the judge's identity (model class, the settings that decide its answers, bound arguments, a
    function judge's code); how it is called (retries, timeouts, keys) is left out."""
    prompt_sha256: str | None = None
    """The sha256 of the judge's prompt template (for prompts written in code: the template texts it uses)."""
    rubrics_sha256: str | None = None
    """The sha256 of the metric's rubric set (a rating rubric and its scores, or its rubrics); None when it has none."""
    calibration: dict[str, Any] | None = None
    """How the judge did against human labels (a certification or correction record); None unless given."""

    @property
    def judged(self) -> bool:
        return self.judge_model is not None or self.judge_sha256 is not None

    @property
    def fingerprint(self) -> str:
        """A stable hash of everything that decides the scores (all fields but ``calibration``)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "calibration"}
        return sha256_text(_canonical(data))[:16]

    def to_dict(self) -> dict[str, Any]:
        """The evaluator as the run record keeps it (``fingerprint`` included, for readers of the file)."""
        out = {k: v for k, v in asdict(self).items() if v is not None and v != {}}
        out["fingerprint"] = self.fingerprint
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evaluator:
        """An evaluator read back from a record (unknown keys ignored, missing ones left empty)."""
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in known}
        kept["metric"] = str(kept.get("metric", ""))
        if kept.get("version") is not None:
            kept["version"] = str(kept["version"])
        return cls(**kept)

    def with_calibration(self, calibration: Mapping[str, Any] | None) -> Evaluator:
        """This evaluator with a calibration or certification record attached (None removes it)."""
        return replace(self, calibration=None if calibration is None else dict(calibration))

    def attributes(self, prefix: str = "levelfield.evaluator") -> dict[str, str]:
        """Flat string attributes for exported scores (OTLP attributes, MLflow params/tags):
        ``<prefix>.<metric>.fingerprint``, ``.version``, ``.judge_model``, ``.prompt_sha256``, ..."""
        base = f"{prefix}.{self.metric}"
        out = {f"{base}.fingerprint": self.fingerprint, f"{base}.kind": self.kind}
        for key in ("version", "judge_model", "judge_sha256", "prompt_sha256", "rubrics_sha256"):
            value = getattr(self, key)
            if value is not None:
                out[f"{base}.{key}"] = str(value)
        if self.judge_settings:
            out[f"{base}.judge_settings"] = _canonical(self.judge_settings)
        if self.options:
            out[f"{base}.options"] = _canonical(self.options)
        if self.calibration:
            out[f"{base}.calibration"] = _canonical(self.calibration)
        return out


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain data (so it stands for itself in every process)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _options(metric: Metric) -> dict[str, Any]:
    """The metric's constructor arguments it keeps (as ``name`` or ``_name``) that are plain data."""
    spec = getattr(metric, "spec", None) if getattr(metric, "saved", False) else None
    if spec:
        args = dict(spec.get("args") or {})
    else:
        args = kept_arguments(metric)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in args.items()
            if k not in _DESCRIBED_APART and _plain(v)}


def evaluator_of(metric: Metric) -> Evaluator:
    """The evaluator of a live metric object: its name, class, version and options, and what
    ``metric.evaluator_details()`` says of its judge, prompt and rubrics (judged metrics)."""
    spec = getattr(metric, "spec", None) if getattr(metric, "saved", False) else None
    kind = str((spec or {}).get("class") or f"{type(metric).__module__}.{type(metric).__qualname__}")
    version = getattr(metric, "version", None)
    details: Mapping[str, Any] = {}
    describe = getattr(metric, "evaluator_details", None)
    if callable(describe):
        try:
            details = describe() or {}
        except Exception as exc:  # noqa: BLE001 - a metric that cannot describe itself must not stop a run
            details = {"judge_model": f"<not described: {type(exc).__name__}>"}
    return Evaluator(
        metric=metric.name,
        kind=kind,
        version=None if version is None or not isinstance(version, (str, int, float)) else str(version),
        options={**_options(metric), **dict(details.get("options") or {})},
        judge_model=details.get("judge_model"),
        judge_settings=details.get("judge_settings"),
        judge_sha256=details.get("judge_sha256"),
        prompt_sha256=details.get("prompt_sha256"),
        rubrics_sha256=details.get("rubrics_sha256"),
        calibration=details.get("calibration"),
    )


def evaluators_of(metrics: Iterable[Metric]) -> dict[str, Evaluator]:
    """Metric name -> :func:`evaluator_of`, in metric order."""
    return {m.name: evaluator_of(m) for m in metrics}


def evaluators_json(evaluators: Mapping[str, Evaluator]) -> dict[str, dict[str, Any]]:
    """The header's ``evaluators`` field."""
    return {name: e.to_dict() for name, e in evaluators.items()}


def evaluators_from_header(header: Mapping[str, Any]) -> dict[str, Evaluator] | None:
    """The evaluators a record's header keeps; None for a record written before they were kept (unknown)."""
    saved = header.get("evaluators")
    if not isinstance(saved, Mapping):
        return None
    out = {}
    for name, data in saved.items():
        if isinstance(data, Mapping):
            out[str(name)] = Evaluator.from_dict({**data, "metric": data.get("metric", name)})
    return out


def _setting_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, limit: int = 3) -> str:
    old, new = _flat(old or {}), _flat(new or {})
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    shown = [f"{k}={old.get(k)!r} vs {new.get(k)!r}" for k in keys[:limit]]
    return ", ".join(shown) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def differences(old: Evaluator, new: Evaluator) -> list[str]:
    """What differs between two evaluators of one metric, each in words (``[]``: equivalent)."""
    if old.fingerprint == new.fingerprint:
        return []
    out = []
    if old.kind != new.kind:
        out.append(f"metric class differs ({old.kind or 'unknown'} vs {new.kind or 'unknown'})")
    if old.version != new.version:
        out.append(f"metric version differs ({old.version or 'none'} vs {new.version or 'none'})")
    if old.options != new.options:
        out.append(f"metric options differ ({_setting_changes(old.options, new.options)})")
    if old.judge_sha256 != new.judge_sha256 or old.judge_model != new.judge_model:
        if old.judge_model != new.judge_model:
            out.append(f"judge model differs ({old.judge_model or 'none'} vs {new.judge_model or 'none'})")
        else:
            said = _setting_changes(old.judge_settings, new.judge_settings)
            out.append(f"judge settings differ ({said})" if said else
                       f"judge differs (sha256 {short(old.judge_sha256)} vs {short(new.judge_sha256)})")
    if old.prompt_sha256 != new.prompt_sha256:
        out.append(f"judge prompt differs (sha256 {short(old.prompt_sha256)} vs {short(new.prompt_sha256)})")
    if old.rubrics_sha256 != new.rubrics_sha256:
        out.append(f"rubric set differs (sha256 {short(old.rubrics_sha256)} vs {short(new.rubrics_sha256)})")
    if old.metric != new.metric and not out:
        out.append(f"metric name differs ({old.metric} vs {new.metric})")
    return out or [f"evaluator differs (fingerprint {old.fingerprint} vs {new.fingerprint})"]


def evaluator_differences(old: Mapping[str, Evaluator] | None, new: Mapping[str, Evaluator] | None,
                          metrics: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(differences, unknown)`` over ``metrics``: each metric whose evaluators differ between the two
    sides, as ``"metric 'm': judge prompt differs (sha256 1a2b… vs 9f8e…)"``; and the metrics whose
    evaluator one side does not record (a record written before evaluators were kept), not checked."""
    found, unknown = [], []
    for name in metrics:
        a = None if old is None else old.get(name)
        b = None if new is None else new.get(name)
        if a is None or b is None:
            unknown.append(name)
            continue
        found += [f"metric {name!r}: {what}" for what in differences(a, b)]
    return found, unknown
