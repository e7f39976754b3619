"""What a judged metric tells the run record of its judge: the model and settings, the prompt's and the rubrics' hashes.

:func:`judged_details` is what ``JudgedMetric.evaluator_details()`` returns, read by
:func:`levelfield._core.results.provenance.evaluator_of`. The prompt hash is the sha256 of the
metric's prompt template (a ``PointwiseMetricPromptTemplate``'s text with its answer format), or,
for a metric that writes its prompt in code (ADK's and Vertex's criteria), of the template texts
its code uses: the module's prompt constants its methods refer to, and its ``instruction``. Edit a
prompt and the hash changes; the code around it is the metric's version.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterable, Mapping
from typing import Any

from .._core.results.provenance import sha256_text

__all__ = ["judged_details", "judge_details", "prompt_text", "rubrics_text", "combined_details"]

# A setting named like a secret (api_key, access_token, default_headers...), not like a count (max_tokens).
_SECRET = re.compile(r"(^|_)(api_?key|key|secret|password|passwd|token|auth|authorization|credentials?|cookies?|headers?)$",
                     re.IGNORECASE)
_TEMPLATE_CHARS = 60  # a module constant this long or longer, referred to by a metric's code, is a template text


def _hidden(value: Any, name: str = "") -> Any:
    """Settings as kept in a record: the value of a secret-looking setting hidden (its hash still counts)."""
    if name and _SECRET.search(name) and value not in (None, "", {}, []):
        return "<hidden>"
    if isinstance(value, Mapping):
        return {str(k): _hidden(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v) for v in value]
    return value


# Chat-model settings that change how a call is made, not what the model answers: left out of the
# judge's identity here (the answer cache keys on every setting; comparability does not need to).
_HOW_IT_CALLS = frozenset({
    "max_retries", "timeout", "request_timeout", "streaming", "disable_streaming", "stream_usage", "verbose",
    "callbacks", "callback_manager", "tags", "metadata", "cache", "rate_limiter", "http_client", "http_async_client",
    "client", "async_client", "max_concurrency", "cacheable",
})


def judge_details(judge: Any) -> dict[str, Any]:
    """``judge_model``, ``judge_settings`` and ``judge_sha256`` of a ``Judge`` (``{}`` for None).

    The hash is of the judge's identity (model class, settings, bound arguments, a function judge's
    code) without the settings that only change how it is called (retries, timeouts, streaming...)."""
    if judge is None:
        return {}
    identity = str(getattr(judge, "identity", "") or "")
    try:
        settings = json.loads(identity)
    except ValueError:
        settings = {"identity": identity}
    if isinstance(settings, dict):
        own = found if isinstance(found := settings.get("settings"), dict) else {}
        own = {k: v for k, v in own.items() if k not in _HOW_IT_CALLS and not _SECRET.search(k)}
        params = given if isinstance(given := settings.get("params"), dict) else {}
        # The model's identifying params mostly repeat its settings: keep only what they add.
        params = {k: v for k, v in params.items() if k not in _HOW_IT_CALLS and own.get(k, object()) != v}
        settings = {**settings, "settings": own, "params": params}
        settings = {k: v for k, v in settings.items() if v not in ({}, [], None)}
    return {
        "judge_model": str(getattr(judge, "label", None) or type(judge).__name__),
        "judge_settings": _hidden(settings),
        "judge_sha256": sha256_text(json.dumps(settings, sort_keys=True, default=str)),
    }


def _names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names(const)
    return names


def _texts_of(fn: Any, found: dict[str, str], seen: set[int], home: str) -> None:
    """The template texts (long module-level string constants) ``fn`` refers to, following the functions of its module.

    Each is keyed by ``home``, the module path of the class whose method ``fn`` is (its ``__module__``), so
    that code moved between a package's modules keeps the hash while the class keeps its path.
    """
    fn = getattr(fn, "__func__", fn)
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if isinstance(fn, property):
        fn = fn.fget
    if not isinstance(fn, types.FunctionType) or id(fn) in seen:
        return
    seen.add(id(fn))
    module_globals = fn.__globals__
    for name in sorted(set(_names(fn.__code__))):
        value = module_globals.get(name)
        if isinstance(value, str) and len(value) >= _TEMPLATE_CHARS:
            found[f"{home}.{name}"] = value
        elif isinstance(value, Mapping) and value and all(isinstance(v, str) for v in value.values()) \
                and any(len(v) >= _TEMPLATE_CHARS for v in value.values()):
            found[f"{home}.{name}"] = json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
        elif isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            _texts_of(value, found, seen, home)


def prompt_text(metric: Any) -> str | None:
    """The text the prompt hash is taken of (see the module docs); None for a metric with no prompt."""
    template = getattr(metric, "metric_prompt_template", None)
    if template is not None:
        text = str(getattr(template, "template", template))
        answer = getattr(metric, "_answer_format", None)
        return text + (f"\n\n{answer}" if isinstance(answer, str) else "")
    found: dict[str, str] = {}
    seen: set[int] = set()
    for cls in type(metric).__mro__:
        if cls.__module__.startswith(("levelfield._core", "builtins", "abc")) or cls.__qualname__ == "JudgedMetric":
            continue
        for value in vars(cls).values():
            _texts_of(value, found, seen, cls.__module__)
    instruction = getattr(metric, "instruction", None)
    if isinstance(instruction, str):
        found["instruction"] = instruction
    if not found:
        return None
    return json.dumps(found, sort_keys=True, ensure_ascii=False)


def rubrics_text(metric: Any) -> str | None:
    """The text the rubric-set hash is taken of: the rating rubric and its scores, or the metric's own rubrics."""
    parts: dict[str, Any] = {}
    template = getattr(metric, "metric_prompt_template", None)
    rubric = getattr(template, "rating_rubric", None)
    if rubric:
        parts["rating_rubric"] = dict(rubric)
    scores = getattr(metric, "scores", None)
    if isinstance(scores, Mapping) and scores:
        parts["scores"] = {str(k): float(v) for k, v in scores.items()}
    rubrics = getattr(metric, "rubrics", None)
    if isinstance(rubrics, (list, tuple)) and rubrics:
        parts["rubrics"] = [r.as_dict() if hasattr(r, "as_dict") else str(r) for r in rubrics]
    for name in ("rubric_type", "rubric_group_name"):
        value = getattr(metric, name, None)
        if isinstance(value, str):
            parts[name] = value
    return json.dumps(parts, sort_keys=True, ensure_ascii=False) if parts else None


def judged_details(metric: Any) -> dict[str, Any]:
    """Everything a judged metric says of its evaluator: its judge, prompt and rubric hashes, samples."""
    panel = getattr(metric, "panel", None) or ()
    out: dict[str, Any]
    if panel:  # a panel is every judge in it, by the name its columns carry
        members = {p.name: judge_details(p.judge) for p in panel}
        out = {"judge_model": "panel of " + ", ".join(members),
               "judge_settings": {name: d["judge_settings"] for name, d in members.items()},
               "judge_sha256": sha256_text(json.dumps({n: d["judge_sha256"] for n, d in members.items()}, sort_keys=True))}
    else:
        out = judge_details(getattr(metric, "judge", None))
    prompt = prompt_text(metric)
    rubrics = rubrics_text(metric)
    out["prompt_sha256"] = None if prompt is None else sha256_text(prompt)
    out["rubrics_sha256"] = None if rubrics is None else sha256_text(rubrics)
    options = {k: getattr(metric, k) for k in ("num_samples", "aggregation", "scope", "focus", "both_orders", "seed")
               if isinstance(getattr(metric, k, None), (str, int, float, bool))}
    if options:
        out["options"] = options
    return out


def combined_details(parts: Iterable[Any]) -> dict[str, Any]:
    """The details of a metric made of several judged ones (each used for some rows): one judge, every prompt and rubric set."""
    found = [judged_details(p) for p in parts]
    if not found:
        return {}
    out = dict(found[0])
    for key in ("prompt_sha256", "rubrics_sha256"):
        values = [d.get(key) for d in found]
        out[key] = None if all(v is None for v in values) else sha256_text(json.dumps(values))
    return out
