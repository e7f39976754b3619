"""LLM-judged metrics: any chat model rates one agent's answer (pointwise) or picks the better of two (pairwise).

A judge is a LangChain chat model object or a ``"provider:model"`` string resolved by LangChain's
``init_chat_model`` (``"openai:gpt-4o"``, ``"anthropic:claude-sonnet-4-5"``,
``"google_vertexai:gemini-2.5-flash"``, ``"ollama:llama3.1"``...). No judge is ever chosen for you.

Judge calls are kept apart from the agent's: each metric writes ``<metric>/judge_latency``,
``<metric>/judge_calls`` and ``<metric>/total_tokens`` (plus input/output tokens when the model
reports them). Each judge has its own concurrency limit and retries transient errors with
backoff. Answers are cached on disk (``.levelfield-cache/judge/`` under the working directory, or
``$LEVELFIELD_CACHE_DIR/judge``) keyed by the judge's identity, the rendered prompt and the
settings, so a re-run does not pay twice. An answer that cannot be parsed is NaN with the raw
answer as explanation and counts as a judge failure (``<metric>/failed``), never a 0.

LangChain is imported only when a judge is resolved or called, never at ``import levelfield``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import string
import tempfile
import time
import warnings
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MetricError, MissingExtraError
from ..types import ToolCall, Usage, content_text
from .base import NAN, Metric, Score, ScoringContext

if TYPE_CHECKING:
    import pandas as pd

    from ..results import EvalResult

__all__ = [
    "Judge",
    "JudgeCache",
    "JudgeReply",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "resolve_judge",
    "default_cache_dir",
    "parse_rating",
    "parse_preference",
    "is_transient_judge_error",
]

# Bump when the cached record's meaning changes, so old entries are not misread.
_CACHE_VERSION = 1

# ---------------------------------------------------------------------------------------------
# Judges
# ---------------------------------------------------------------------------------------------

_PROVIDER_ALIASES = {"vertex": "google_vertexai", "vertexai": "google_vertexai"}

_HOW_TO_GIVE_A_JUDGE = (
    "pass judge=<a LangChain chat model> (e.g. ChatOpenAI(model='gpt-4o')) or "
    "judge='provider:model' (e.g. 'openai:gpt-4o', 'anthropic:claude-sonnet-4-5', "
    "'google_vertexai:gemini-2.5-flash'; each needs its LangChain package, e.g. langchain-openai)"
)

# Exception class names that mean "try again later" across the common provider SDKs
# (openai, anthropic, google.api_core, httpx); matched by name so that none is imported.
_TRANSIENT_NAMES = frozenset(
    {
        "RateLimitError",
        "APIConnectionError",
        "APITimeoutError",
        "InternalServerError",
        "OverloadedError",
        "ServiceUnavailable",
        "ServiceUnavailableError",
        "ResourceExhausted",
        "DeadlineExceeded",
        "TooManyRequests",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
    }
)


def is_transient_judge_error(exc: BaseException) -> bool:
    """Whether a judge call that raised ``exc`` is worth retrying (rate limits, 5xx, timeouts, dropped connections)."""
    if getattr(exc, "transient", False) or getattr(exc, "error_type", None) == "transient":
        return True
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(exc, "code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and (status in (408, 409, 425, 429) or 500 <= status < 600):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def _init_chat_model(spec: str) -> Any:
    """A chat model from ``"provider:model"``, through LangChain's ``init_chat_model``."""
    provider, sep, model = spec.partition(":")
    if sep and provider.strip().lower() in _PROVIDER_ALIASES:
        spec = f"{_PROVIDER_ALIASES[provider.strip().lower()]}:{model}"
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise MissingExtraError("langchain", "langchain", f"the judge {spec!r} (a 'provider:model' string)") from None
    try:
        return init_chat_model(spec)
    except ImportError as exc:
        raise MetricError(
            f"judge {spec!r}: the provider's LangChain package is not installed ({exc}). "
            "Install it, or pass a chat model object as judge=..."
        ) from exc
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MetricError(
            f"judge {spec!r} could not be resolved: {first} Write it as 'provider:model', "
            "e.g. 'openai:gpt-4o' or 'google_vertexai:gemini-2.5-flash'"
        ) from exc
    except Exception as exc:  # e.g. a provider client that wants an API key at construction
        raise MetricError(f"judge {spec!r} could not be created: {type(exc).__name__}: {exc}") from exc


def _model_identity(model: Any) -> str:
    """What makes two judges give the same answers: model class, model name and settings, bound kwargs."""
    kwargs: dict[str, Any] = {}
    inner = model
    # model.bind(temperature=0) wraps the model; its kwargs change answers, so they are part of it.
    while hasattr(inner, "bound") and isinstance(getattr(inner, "kwargs", None), dict):
        kwargs = {**inner.kwargs, **kwargs}
        inner = inner.bound
    cls = type(inner)
    try:
        params = dict(inner._identifying_params)
    except Exception:
        params = {}
    for attr in ("model", "model_name", "model_id"):
        value = getattr(inner, attr, None)
        if isinstance(value, str):
            params.setdefault(attr, value)
    return json.dumps(
        {"class": f"{cls.__module__}.{cls.__qualname__}", "params": params, "bound": kwargs},
        sort_keys=True,
        default=str,
    )


def _message_text(message: Any) -> str:
    """The text of a chat message, whether its content is a string or a list of content blocks."""
    return content_text(getattr(message, "content", message))


def _message_usage(message: Any) -> Usage | None:
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    get = meta.get if isinstance(meta, Mapping) else (lambda k, d=0: getattr(meta, k, d))
    inp, out = int(get("input_tokens", 0) or 0), int(get("output_tokens", 0) or 0)
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=int(get("total_tokens", 0) or (inp + out)))


@dataclass
class JudgeReply:
    """What one judge call gave back: its text (and structured answer), cost, or the error it ended with."""

    text: str | None = None
    """The judge's raw answer (the structured answer as JSON when it gave one)."""
    parsed: dict[str, Any] | None = None
    """The structured answer, when the model gave one through structured output."""
    usage: Usage | None = None
    """Tokens this call spent; None on a cache hit or when the model does not report them."""
    latency: float = 0.0
    """Seconds spent waiting for the judge (0 on a cache hit)."""
    calls: int = 0
    """Requests sent to the judge, retries included (0 on a cache hit)."""
    cached: bool = False
    error: str | None = None
    """Why no answer came back (the last error after retries), else None."""


class JudgeCache:
    """Judge answers on disk, one small JSON file per call, so a re-run does not pay twice.

    ``directory`` defaults to ``$LEVELFIELD_CACHE_DIR/judge`` or ``.levelfield-cache/judge`` under
    the working directory at the time of the call. Delete the directory to forget everything.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._directory = Path(directory) if directory is not None else None
        self._warned = False

    @property
    def directory(self) -> Path:
        return self._directory if self._directory is not None else default_cache_dir()

    @staticmethod
    def key(parts: Mapping[str, Any]) -> str:
        """A stable hash of everything that determines the judge's answer."""
        blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._path(key).open(encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("version") == _CACHE_VERSION else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write then rename, so a concurrent reader never sees half a file.
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({**record, "version": _CACHE_VERSION}, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only disk must not fail the evaluation
            if not self._warned:
                warnings.warn(f"levelfield: judge cache at {self.directory} is not writable ({exc}); going on without it")
                self._warned = True

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"


def default_cache_dir() -> Path:
    """``$LEVELFIELD_CACHE_DIR/judge``, else ``.levelfield-cache/judge`` under the working directory."""
    return Path(os.environ.get("LEVELFIELD_CACHE_DIR") or ".levelfield-cache") / "judge"


def _resolve_cache(cache: bool | str | os.PathLike[str] | JudgeCache | None) -> JudgeCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return JudgeCache()
    if isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise MetricError(f"cache must be True, False, a directory or a JudgeCache, got {type(cache).__name__}")


class Judge:
    """A chat model used as a judge: its identity (for the cache), its own concurrency limit, retries and timeout.

    Give one ``Judge`` to several metrics to share one limit; metrics given the same model
    object with the same settings share one automatically.
    ``structured_output``: None uses the model's ``with_structured_output`` when it has one and
    parses text otherwise; True or False forces one way.
    """

    def __init__(
        self,
        model: Any,
        *,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | None = 120.0,
        structured_output: bool | None = None,
    ) -> None:
        if model is None:
            raise MetricError(f"a judge is needed: {_HOW_TO_GIVE_A_JUDGE}")
        self.spec = model if isinstance(model, str) else None
        if isinstance(model, str):
            model = _init_chat_model(model)
        elif not hasattr(model, "ainvoke"):
            raise MetricError(
                f"judge must be a LangChain chat model or a 'provider:model' string, got {type(model).__name__}; "
                + _HOW_TO_GIVE_A_JUDGE
            )
        if max_concurrency < 1:
            raise MetricError(f"judge max_concurrency must be >= 1, got {max_concurrency}")
        if retries < 0:
            raise MetricError(f"judge retries must be >= 0, got {retries}")
        self.model = model
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.structured_output = structured_output
        self.identity = _model_identity(model)
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._structured: dict[str, Any] = {}
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[JudgeReply]]] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        label = self.spec or type(self.model).__name__
        return f"Judge({label!r}, max_concurrency={self.max_concurrency}, retries={self.retries})"

    def _limit(self) -> asyncio.Semaphore:
        # A semaphore belongs to one event loop; evaluate() may run each call on a new one.
        loop = asyncio.get_running_loop()
        sem = self._limits.get(loop)
        if sem is None:
            sem = self._limits[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    def _structured_runnable(self, schema: dict[str, Any]) -> Any | None:
        """The model wrapped to answer in ``schema``, or None when it cannot (then text is parsed)."""
        if self.structured_output is False:
            return None
        key = json.dumps(schema, sort_keys=True)
        if key not in self._structured:
            try:
                runnable = self.model.with_structured_output(schema, include_raw=True)
            except (NotImplementedError, AttributeError, TypeError, ValueError) as exc:
                if self.structured_output:
                    raise MetricError(
                        f"judge {self!r} was asked for structured output but cannot give it: {exc}"
                    ) from exc
                runnable = None
            self._structured[key] = runnable
        return self._structured[key]

    def mode(self, schema: dict[str, Any]) -> str:
        """``"structured"`` or ``"text"``: how this judge will be asked for ``schema``."""
        return "structured" if self._structured_runnable(schema) is not None else "text"

    async def _call_once(self, prompt: str, runnable: Any | None) -> JudgeReply:
        if runnable is None:
            message = await self.model.ainvoke(prompt)
            return JudgeReply(text=_message_text(message), usage=_message_usage(message))
        out = await runnable.ainvoke(prompt)
        if isinstance(out, Mapping) and "raw" in out:
            raw, parsed = out.get("raw"), out.get("parsed")
        else:
            raw, parsed = None, out
        if parsed is not None and hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump()
        if not isinstance(parsed, Mapping):
            parsed = None
        text = _message_text(raw) if raw is not None else ""
        if parsed is not None:
            text = json.dumps(dict(parsed), ensure_ascii=False, default=str)
        elif not text and raw is not None and getattr(raw, "tool_calls", None):
            text = json.dumps(raw.tool_calls, default=str)
        return JudgeReply(text=text, parsed=dict(parsed) if parsed is not None else None, usage=_message_usage(raw))

    async def ask(
        self,
        prompt: str,
        schema: dict[str, Any],
        *,
        cache: JudgeCache | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> JudgeReply:
        """One judge answer to ``prompt``: from the cache, or from the model with retries; never raises for judge errors."""
        runnable = self._structured_runnable(schema)
        mode = "structured" if runnable is not None else "text"
        key = None
        if cache is not None:
            key = cache.key(
                {"judge": self.identity, "prompt": prompt, "mode": mode, "schema": schema, "settings": dict(settings or {})}
            )
            hit = cache.get(key)
            if hit is not None:
                return JudgeReply(text=hit.get("text"), parsed=hit.get("parsed"), cached=True)
            # The same question already on its way (e.g. one answer judged in several trials):
            # wait for that answer instead of paying for it twice.
            pending = self._pending.setdefault(asyncio.get_running_loop(), {})
            if key in pending:
                reply = await asyncio.shield(pending[key])
                return replace(reply, usage=None, latency=0.0, calls=0, cached=reply.error is None)
            future: asyncio.Future[JudgeReply] = asyncio.ensure_future(self._fetch(prompt, runnable, cache, key))
            pending[key] = future
            try:
                return await future
            finally:
                pending.pop(key, None)
        return await self._fetch(prompt, runnable, None, None)

    async def _fetch(self, prompt: str, runnable: Any | None, cache: JudgeCache | None, key: str | None) -> JudgeReply:
        """Ask the model, retrying transient errors with exponential backoff; store the answer in the cache."""
        calls = 0
        latency = 0.0
        while True:
            calls += 1
            try:
                async with self._limit():
                    start = time.perf_counter()
                    try:
                        call = self._call_once(prompt, runnable)
                        reply = await (asyncio.wait_for(call, self.timeout) if self.timeout else call)
                    finally:
                        latency += time.perf_counter() - start
            except Exception as exc:
                if calls <= self.retries and is_transient_judge_error(exc):
                    await asyncio.sleep(self.backoff * 2 ** (calls - 1))
                    continue
                message = str(exc) or ("timed out" if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) else "")
                return JudgeReply(error=f"{type(exc).__name__}: {message}", latency=latency, calls=calls)
            reply.latency, reply.calls = latency, calls
            if cache is not None and key is not None:
                cache.put(key, {"text": reply.text, "parsed": reply.parsed})
            return reply


# Judges built from the same model object (or string) and settings share one concurrency limit.
_SHARED_JUDGES: weakref.WeakValueDictionary[tuple[Any, ...], Judge] = weakref.WeakValueDictionary()


def resolve_judge(judge: Any, *, metric: str | None = None, **settings: Any) -> Judge:
    """A :class:`Judge` from a Judge, a chat model or a ``"provider:model"`` string; None is an error saying how to give one."""
    if isinstance(judge, Judge):
        return judge
    if judge is None:
        what = f"the judged metric {metric!r}" if metric else "a judged metric"
        raise MetricError(f"{what} has no judge: {_HOW_TO_GIVE_A_JUDGE}. levelfield never picks a judge for you.")
    key = (judge if isinstance(judge, str) else id(judge), tuple(sorted(settings.items())))
    shared = _SHARED_JUDGES.get(key)
    if shared is not None and (isinstance(judge, str) or shared.model is judge):
        return shared
    made = Judge(judge, **settings)
    _SHARED_JUDGES[key] = made
    return made


# ---------------------------------------------------------------------------------------------
# Rendering a row into a prompt
# ---------------------------------------------------------------------------------------------

# Row fields a template may use, besides the dataset's own extra columns (metadata).
_ROW_FIELDS = ("prompt", "response", "reference", "predicted_trajectory", "reference_trajectory", "history", "case_id")
# Fields that are None when a row lacks them: a metric using one gives NaN on such rows.
_OPTIONAL_FIELDS = ("prompt", "response", "reference", "reference_trajectory")


def _render_value(value: Any) -> str:
    """A row value as the judge reads it: text as is, trajectories and structures as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, ToolCall) for v in value):
        return json.dumps([c.to_vertex() for c in value], indent=2, ensure_ascii=False, default=str)
    if isinstance(value, list) and value and all(hasattr(v, "role") and hasattr(v, "content") for v in value):
        return "\n".join(f"{m.role}: {m.content}" for m in value)
    if isinstance(value, (list, dict)):
        plain = [v.model_dump() if hasattr(v, "model_dump") else v for v in value] if isinstance(value, list) else value
        return json.dumps(plain, indent=2, ensure_ascii=False, default=str)
    return str(value)


def _row_value(ctx: ScoringContext, name: str, metric: str) -> Any:
    if name in _ROW_FIELDS:
        return getattr(ctx, name)
    if name in ctx.metadata:
        return ctx.metadata[name]
    available = sorted({*_ROW_FIELDS, *ctx.metadata})
    raise MetricError(
        f"metric {metric!r}: the prompt template uses {{{name}}}, but case {ctx.case_id!r} has no field {name!r}; "
        f"fields available: {', '.join(available)}"
    )


def _section(title: str, items: Mapping[str, str] | str | None) -> list[str]:
    if not items:
        return []
    body = items if isinstance(items, str) else "\n".join(f"{k}: {v}" for k, v in items.items())
    return [title, body, ""]


def _check_text_dict(value: Any, what: str, owner: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise MetricError(f"{owner}: {what} must be a non-empty dict of name -> description, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _check_variables(names: Sequence[str] | None, owner: str) -> list[str]:
    out: list[str] = []
    for name in names or []:
        if not isinstance(name, str) or not name.isidentifier():
            raise MetricError(f"{owner}: input variable {name!r} is not a valid name (letters, digits, underscores)")
        if name not in out:
            out.append(name)
    return out


_DEFAULT_POINTWISE_INSTRUCTION = (
    "You are grading the work of an AI agent. You are shown what the user asked, what the agent did, "
    "and the agent's final response. Judge it only by the criteria below, think it through, and give "
    "exactly one rating from the rating rubric."
)
_DEFAULT_POINTWISE_STEPS = {
    "Step 1": "Check the agent's work against each criterion in turn, noting what meets it and what does not.",
    "Step 2": "Pick the single rubric rating that fits best and explain it in a few sentences.",
}


class PointwiseMetricPromptTemplate:
    """A judge prompt built from criteria and a rating rubric, as in Vertex AI; users read, copy and edit it.

    ``input_variables`` are the row fields shown to the judge: ``prompt``, ``reference``,
    ``predicted_trajectory``, ``reference_trajectory``, ``history``, ``case_id`` or any extra
    dataset column. ``response`` is always shown. Trajectories are rendered as indented JSON.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, str],
        rating_rubric: Mapping[str, str],
        input_variables: Sequence[str] | None = None,
        instruction: str | None = None,
        evaluation_steps: Mapping[str, str] | None = None,
        metric_definition: str | None = None,
        few_shot_examples: Sequence[str] | None = None,
    ) -> None:
        owner = "PointwiseMetricPromptTemplate"
        self.criteria = _check_text_dict(criteria, "criteria", owner)
        self.rating_rubric = _check_text_dict(rating_rubric, "rating_rubric", owner)
        variables = _check_variables(input_variables, owner)
        # The response is what is judged, so it is always shown (and shown last).
        self.input_variables = [v for v in variables if v != "response"] + ["response"]
        self.instruction = instruction or _DEFAULT_POINTWISE_INSTRUCTION
        self.evaluation_steps = dict(evaluation_steps) if evaluation_steps else dict(_DEFAULT_POINTWISE_STEPS)
        self.metric_definition = metric_definition
        self.few_shot_examples = list(few_shot_examples or [])

    def _compose(self, values: Mapping[str, str]) -> str:
        lines = ["# Instruction", self.instruction, "", "# Evaluation"]
        lines += _section("## Metric definition", self.metric_definition)
        lines += _section("## Criteria", self.criteria)
        lines += _section("## Rating rubric", self.rating_rubric)
        lines += _section("## Evaluation steps", self.evaluation_steps)
        lines += _section("## Examples", "\n\n".join(self.few_shot_examples))
        lines += ["# What the agent was given and what it did"]
        for name in self.input_variables:
            if name == "response":
                continue
            lines += [f"## {name}", values[name], ""]
        lines += ["## response", values["response"]]
        return "\n".join(lines)

    @property
    def template(self) -> str:
        """The prompt with ``{placeholders}`` where the row's values go."""
        return self._compose({name: "{" + name + "}" for name in self.input_variables})

    def render(self, values: Mapping[str, Any]) -> str:
        """The prompt for one row; ``values`` maps each input variable to its value."""
        missing = [n for n in self.input_variables if n not in values]
        if missing:
            raise MetricError(f"the prompt template needs {', '.join(missing)}, which the row does not have")
        return self._compose({n: _render_value(values[n]) for n in self.input_variables})

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"PointwiseMetricPromptTemplate(criteria={list(self.criteria)}, rating_rubric={list(self.rating_rubric)}, input_variables={self.input_variables})"


class _FreeformTemplate:
    """A user's own prompt string with ``{name}`` placeholders (``{{``/``}}`` for literal braces)."""

    def __init__(self, text: str, owner: str) -> None:
        names: list[str] = []
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
        except ValueError as exc:
            raise MetricError(f"{owner}: the prompt template is not a valid format string: {exc} (write literal braces as {{{{ and }}}})") from None
        for name in fields:
            if not name.isidentifier():
                raise MetricError(
                    f"{owner}: placeholder {{{name}}} in the prompt template is not a plain field name; "
                    "use names like {prompt}, {response}, {predicted_trajectory}, and {{ }} for literal braces"
                )
            if name not in names:
                names.append(name)
        if not names:
            raise MetricError(f"{owner}: the prompt template has no placeholders; use e.g. {{prompt}} and {{response}}")
        self.text = text
        self.input_variables = names
        self.rating_rubric: dict[str, str] | None = None

    @property
    def template(self) -> str:
        return self.text

    def render(self, values: Mapping[str, Any]) -> str:
        missing = [n for n in self.input_variables if n not in values]
        if missing:
            raise MetricError(f"the prompt template needs {', '.join(missing)}, which the row does not have")
        return self.text.format_map({n: _render_value(values[n]) for n in self.input_variables})

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------------------------
# Reading the judge's answer
# ---------------------------------------------------------------------------------------------

_SCORE_KEYS = ("score", "rating", "grade", "verdict", "result")
_WINNER_KEYS = ("winner", "verdict", "preferred", "better", "choice", "preference", "result")
_EXPLANATION_KEYS = ("explanation", "rationale", "reasoning", "reason", "justification", "analysis")
_TRIM = " \t\r\n*_`'\"[](){}.,;:"


def _json_objects(text: str) -> list[dict[str, Any]]:
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


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def _rating_value(token: Any, scores: Mapping[str, float] | None) -> float | None:
    """The score a rating stands for; None when it is not one of the rubric's ratings."""
    if isinstance(token, bool):
        token = int(token)
    text = str(token).strip(_TRIM)
    if "/" in text:  # "4/5"
        text = text.split("/")[0].strip(_TRIM)
    if scores is None:
        return float(text) if _is_number(text) else None
    for key, value in scores.items():
        if key.strip().lower() == text.lower():
            return value
    if _is_number(text):
        for key, value in scores.items():
            if _is_number(key) and float(key) == float(text):
                return value
    return None


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
    candidates: list[tuple[Any, Mapping[str, Any]]] = []
    if parsed is not None:
        candidates.append((_get_ci(parsed, _SCORE_KEYS), parsed))
    for obj in reversed(_json_objects(text)):
        token = _get_ci(obj, _SCORE_KEYS)
        if token is not None:
            candidates.append((token, obj))
            break
    line = _labelled_line(text, _SCORE_KEYS)
    if line is not None:
        candidates.append((line, {}))
    if text.strip() and len(text.strip()) <= 24:
        candidates.append((text.strip(), {}))
    for token, obj in candidates:
        if token is None:
            continue
        value = _rating_value(token, scores)
        # The first rating found decides: a later, valid-looking one would be a guess.
        return (value, _explanation_of(obj, text)) if value is not None else None
    return None


def _preference(token: Any) -> str | None:
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
    candidates: list[tuple[Any, Mapping[str, Any]]] = []
    if parsed is not None:
        candidates.append((_get_ci(parsed, _WINNER_KEYS), parsed))
    for obj in reversed(_json_objects(text)):
        token = _get_ci(obj, _WINNER_KEYS)
        if token is not None:
            candidates.append((token, obj))
            break
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
        choice = _preference(token)
        return (choice, _explanation_of(obj, text)) if choice is not None else None
    return None


def _aggregate(values: Sequence[float], how: str) -> tuple[float, float]:
    """(score, agreement): majority (a tie between verdicts gives their mean) or mean; agreement = share of the modal answer."""
    counts = Counter(values)
    top = max(counts.values())
    agreement = top / len(values)
    if how == "mean":
        return sum(values) / len(values), agreement
    modal = [v for v in counts if counts[v] == top]
    return sum(modal) / len(modal), agreement


def _sum_usage(replies: Sequence[JudgeReply]) -> Usage | None:
    total: Usage | None = None
    for reply in replies:
        # A cache hit cost nothing; a call whose model reports no usage adds nothing known.
        spent = Usage() if reply.cached else reply.usage
        if spent is not None:
            total = spent if total is None else total + spent
    return total


def _cost_columns(replies: Sequence[JudgeReply]) -> tuple[dict[str, Any], Usage | None]:
    usage = _sum_usage(replies)
    extra: dict[str, Any] = {
        "judge_latency": sum(r.latency for r in replies),
        "judge_calls": sum(r.calls for r in replies),
    }
    if usage is not None:
        extra["input_tokens"] = usage.input_tokens
        extra["output_tokens"] = usage.output_tokens
    return extra, usage


# ---------------------------------------------------------------------------------------------
# Pointwise
# ---------------------------------------------------------------------------------------------


def _answer_format(field: str, choices: Sequence[str] | None) -> str:
    allowed = f"one of: {', '.join(choices)}" if choices else "a number"
    return (
        "# Your answer\n"
        "Reply with one JSON object and nothing else:\n"
        f'{{"explanation": "<why, in a few sentences>", "{field}": "<{allowed}>"}}'
    )


def _schema(field: str, choices: Sequence[str] | None, description: str) -> dict[str, Any]:
    value: dict[str, Any] = (
        {"type": "string", "enum": list(choices), "description": f"One of: {', '.join(choices)}."}
        if choices
        else {"type": "number", "description": "The score."}
    )
    return {
        "title": "judgement",
        "description": description,
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "Why, in a few sentences."},
            field: value,
        },
        "required": ["explanation", field],
    }


class _Judging:
    """What pointwise and pairwise metrics share: a judge, sampling and the cache."""

    name: str

    def _setup_judging(
        self,
        judge: Any,
        *,
        num_samples: int,
        cache: Any,
        max_concurrency: int,
        retries: int,
        backoff: float,
        timeout: float | None,
        structured_output: bool | None,
    ) -> None:
        if not isinstance(num_samples, int) or num_samples < 1:
            raise MetricError(f"metric {self.name!r}: num_samples must be a positive int, got {num_samples!r}")
        self.judge = resolve_judge(
            judge,
            metric=self.name,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )
        self.num_samples = num_samples
        self.cache = _resolve_cache(cache)

    async def _ask_all(self, prompts: Sequence[str], schema: dict[str, Any]) -> list[JudgeReply]:
        # Each sample is its own cache entry, so a re-run replays all n answers.
        return list(
            await asyncio.gather(
                *(
                    self.judge.ask(p, schema, cache=self.cache, settings={"sample": i, "of": self.num_samples})
                    for i, p in enumerate(prompts)
                )
            )
        )


class PointwiseMetric(_Judging, Metric):
    """A judge model rates each row by a rubric: ``<metric>/score`` and ``<metric>/explanation``.

    ``metric_prompt_template``: a :class:`PointwiseMetricPromptTemplate`, or your own prompt string
    with ``{prompt}``, ``{response}``, ``{predicted_trajectory}``... placeholders (the judge is
    then asked for a number). Rubric ratings that are numbers are the scores; for word ratings
    give ``rubric_scores={"pass": 1, "fail": 0}``.
    ``num_samples=n`` asks the judge n times: the score is the majority rating (binary rubrics)
    or the mean (``aggregation="auto"``, or force ``"majority"`` / ``"mean"``), and
    ``<metric>/agreement`` is the share of samples that gave the most common rating.
    The other keywords configure the judge (see :class:`Judge`) and the cache (True, False, a
    directory, or a :class:`JudgeCache`).
    """

    is_async = True  # judge calls are awaited, concurrently across rows

    def __init__(
        self,
        metric: str,
        metric_prompt_template: PointwiseMetricPromptTemplate | str,
        judge: Any = None,
        *,
        num_samples: int = 1,
        aggregation: str = "auto",
        rubric_scores: Mapping[str, float] | None = None,
        cache: bool | str | os.PathLike[str] | JudgeCache = True,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | None = 120.0,
        structured_output: bool | None = None,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PointwiseMetric needs a metric name, got {metric!r}")
        self.name = metric
        owner = f"PointwiseMetric {metric!r}"
        if isinstance(metric_prompt_template, str):
            self.metric_prompt_template: PointwiseMetricPromptTemplate | _FreeformTemplate = _FreeformTemplate(
                metric_prompt_template, owner
            )
        elif isinstance(metric_prompt_template, PointwiseMetricPromptTemplate):
            self.metric_prompt_template = metric_prompt_template
        else:
            raise MetricError(
                f"{owner}: metric_prompt_template must be a PointwiseMetricPromptTemplate or a str, "
                f"got {type(metric_prompt_template).__name__}"
            )
        self.scores = self._rubric_scores(owner, rubric_scores)
        if aggregation not in ("auto", "majority", "mean"):
            raise MetricError(f"{owner}: aggregation must be 'auto', 'majority' or 'mean', got {aggregation!r}")
        if aggregation == "auto":
            binary = self.scores is not None and len(set(self.scores.values())) <= 2
            aggregation = "majority" if binary else "mean"
        self.aggregation = aggregation
        self.requires = tuple(v for v in self.metric_prompt_template.input_variables if v in _OPTIONAL_FIELDS)
        choices = list(self.scores) if self.scores is not None else None
        self._schema = _schema("score", choices, "A rating of the agent's work by the rubric.")
        self._answer_format = _answer_format("score", choices)
        self._setup_judging(
            judge,
            num_samples=num_samples,
            cache=cache,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )

    def _rubric_scores(self, owner: str, rubric_scores: Mapping[str, float] | None) -> dict[str, float] | None:
        rubric = self.metric_prompt_template.rating_rubric
        if rubric is None:
            return {str(k): float(v) for k, v in rubric_scores.items()} if rubric_scores else None
        if rubric_scores:
            missing = [k for k in rubric if k not in rubric_scores]
            if missing:
                raise MetricError(f"{owner}: rubric_scores gives no score for rating(s) {missing}")
            return {k: float(rubric_scores[k]) for k in rubric}
        words = [k for k in rubric if not _is_number(k)]
        if words:
            raise MetricError(
                f"{owner}: rating(s) {words} are not numbers; give rubric_scores={{rating: score, ...}} to score them"
            )
        return {k: float(k) for k in rubric}

    def render(self, ctx: ScoringContext) -> str:
        """The full prompt the judge sees for this row (template, row values and answer format)."""
        template = self.metric_prompt_template
        values = {n: _row_value(ctx, n, self.name) for n in template.input_variables}
        return f"{template.render(values)}\n\n{self._answer_format}"

    async def ascore(self, ctx: ScoringContext) -> Score:
        prompt = self.render(ctx)
        replies = await self._ask_all([prompt] * self.num_samples, self._schema)
        return self._verdict(replies)

    def score(self, ctx: ScoringContext) -> Score:
        from ..runner import run_coroutine

        return run_coroutine(self.ascore(ctx))

    def _verdict(self, replies: Sequence[JudgeReply]) -> Score:
        extra, usage = _cost_columns(replies)
        readings = [
            (reply, parse_rating(reply.text, self.scores, reply.parsed)) for reply in replies if reply.error is None
        ]
        good = [(reply, r) for reply, r in readings if r is not None]
        if self.num_samples > 1:
            extra["samples_failed"] = len(replies) - len(good)
        if not good:
            first = replies[0]
            if first.error is not None:
                extra["error"] = first.error
                explanation = f"judge error: {first.error}"
            else:
                explanation = first.text or "(empty answer)"
            return Score(NAN, explanation=explanation, extra=extra, failed=True, usage=usage)
        values = [r[0] for _, r in good]
        value, agreement = _aggregate(values, self.aggregation)
        if self.num_samples > 1:
            extra["agreement"] = agreement
        closest = min(good, key=lambda g: abs(g[1][0] - value))
        return Score(value, explanation=closest[1][1], extra=extra, usage=usage)

    def __repr__(self) -> str:
        return f"PointwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"


# ---------------------------------------------------------------------------------------------
# Pairwise
# ---------------------------------------------------------------------------------------------

_AGENT_FIELDS = ("response", "predicted_trajectory")

_DEFAULT_PAIRWISE_INSTRUCTION = (
    "You are comparing the work of two AI agents, A and B, on the same request. You are shown the "
    "request, then what each agent did and answered. Judge only by the criteria below; the order in "
    "which the agents are shown and the length of their answers say nothing about their quality."
)
_DEFAULT_PAIRWISE_STEPS = {
    "Step 1": "Check each agent's work against each criterion.",
    "Step 2": "Decide which agent did better overall, or whether they are equally good, and explain why.",
}
_DEFAULT_PAIRWISE_RUBRIC = {
    "A": "Agent A did better than agent B.",
    "B": "Agent B did better than agent A.",
    "tie": "Neither did better: both are equally good or equally bad.",
}
_DEFAULT_PAIRWISE_CRITERIA = {
    "Task completion": "The agent did what the user asked, completely and correctly, calling the right tools with the right arguments.",
    "Faithfulness": "The final response states only what the agent's tool results support and tells the user what was done.",
    "Economy": "The agent made no needless, repeated or harmful tool calls.",
}


class PairwiseMetricPromptTemplate:
    """A prompt for judging two agents side by side: criteria, an A/B/tie rubric and the row fields to show.

    Case fields (``prompt``, ``reference``, ``reference_trajectory``, ``history``, extra columns)
    are shown once; agent fields (``response``, ``predicted_trajectory``) once per agent.
    ``response`` is always shown.
    """

    def __init__(
        self,
        *,
        criteria: Mapping[str, str] | None = None,
        rating_rubric: Mapping[str, str] | None = None,
        input_variables: Sequence[str] | None = None,
        instruction: str | None = None,
        evaluation_steps: Mapping[str, str] | None = None,
        metric_definition: str | None = None,
    ) -> None:
        owner = "PairwiseMetricPromptTemplate"
        self.criteria = _check_text_dict(criteria or _DEFAULT_PAIRWISE_CRITERIA, "criteria", owner)
        self.rating_rubric = _check_text_dict(rating_rubric or _DEFAULT_PAIRWISE_RUBRIC, "rating_rubric", owner)
        labels = {_preference(k) for k in self.rating_rubric}
        if not {"A", "B"} <= labels or None in labels:
            raise MetricError(
                f"{owner}: rating_rubric keys must be 'A', 'B' and optionally 'tie' (or 'SAME'), got {list(self.rating_rubric)}"
            )
        variables = _check_variables(
            input_variables if input_variables is not None else ["prompt", "predicted_trajectory"], owner
        )
        self.input_variables = [v for v in variables if v != "response"] + ["response"]
        self.instruction = instruction or _DEFAULT_PAIRWISE_INSTRUCTION
        self.evaluation_steps = dict(evaluation_steps) if evaluation_steps else dict(_DEFAULT_PAIRWISE_STEPS)
        self.metric_definition = metric_definition

    @property
    def case_variables(self) -> list[str]:
        return [v for v in self.input_variables if v not in _AGENT_FIELDS]

    @property
    def agent_variables(self) -> list[str]:
        return [v for v in self.input_variables if v in _AGENT_FIELDS]

    def _compose(self, case: Mapping[str, str], first: Mapping[str, str], second: Mapping[str, str]) -> str:
        lines = ["# Instruction", self.instruction, "", "# Evaluation"]
        lines += _section("## Metric definition", self.metric_definition)
        lines += _section("## Criteria", self.criteria)
        lines += _section("## Rating rubric", self.rating_rubric)
        lines += _section("## Evaluation steps", self.evaluation_steps)
        lines += ["# The request"]
        for name in self.case_variables:
            lines += [f"## {name}", case[name], ""]
        for label, values in (("A", first), ("B", second)):
            lines += [f"# Agent {label}"]
            for name in self.agent_variables:
                lines += [f"## {name} of agent {label}", values[name], ""]
        return "\n".join(lines).rstrip()

    @property
    def template(self) -> str:
        """The prompt with ``{placeholders}``: ``{name}`` for case fields, ``{name_a}`` / ``{name_b}`` for agent fields."""
        return self._compose(
            {n: "{" + n + "}" for n in self.case_variables},
            {n: "{" + n + "_a}" for n in self.agent_variables},
            {n: "{" + n + "_b}" for n in self.agent_variables},
        )

    def render(self, case: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any]) -> str:
        """The prompt for one case, with ``first`` shown as agent A and ``second`` as agent B."""
        return self._compose(
            {n: _render_value(case[n]) for n in self.case_variables},
            {n: _render_value(first[n]) for n in self.agent_variables},
            {n: _render_value(second[n]) for n in self.agent_variables},
        )

    def __str__(self) -> str:
        return self.template


class _FreeformPairwiseTemplate(_FreeformTemplate):
    """A user's pairwise prompt string: ``{response_a}``, ``{response_b}``, ``{predicted_trajectory_a}``... and case fields."""

    def __init__(self, text: str, owner: str) -> None:
        super().__init__(text, owner)
        agent = [n for n in self.input_variables if n[:-2] in _AGENT_FIELDS and n[-2:] in ("_a", "_b")]
        if not {"response_a", "response_b"} <= set(agent):
            raise MetricError(f"{owner}: a pairwise prompt template must use {{response_a}} and {{response_b}}")
        self.case_variables = [n for n in self.input_variables if n not in agent]
        self.agent_variables = sorted({n[:-2] for n in agent}, key=_AGENT_FIELDS.index)
        self._agent_placeholders = agent

    def render(self, case: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any]) -> str:  # type: ignore[override]
        values = {n: case[n] for n in self.case_variables}
        for name in self._agent_placeholders:
            values[name] = (first if name.endswith("_a") else second)[name[:-2]]
        return super().render(values)


class PairwiseMetric(_Judging):
    """A judge model compares two agents' work on the same case: 1 = A better, 0 = B better, 0.5 = tie.

    Which agent is shown first is decided per case by a seeded hash (reproducible, about half the
    cases each way) and alternates across ``num_samples``, to counter the judges' position bias;
    ``num_samples=2`` shows every case in both orders. Use :meth:`ascore_pair` on two scoring
    contexts of one case, or :meth:`compare_results` on two ``EvalResult``s of one dataset.
    It is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
    """

    def __init__(
        self,
        metric: str = "pairwise_preference",
        metric_prompt_template: PairwiseMetricPromptTemplate | str | None = None,
        judge: Any = None,
        *,
        num_samples: int = 1,
        seed: int = 0,
        cache: bool | str | os.PathLike[str] | JudgeCache = True,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | None = 120.0,
        structured_output: bool | None = None,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PairwiseMetric needs a metric name, got {metric!r}")
        self.name = metric
        owner = f"PairwiseMetric {metric!r}"
        if metric_prompt_template is None:
            metric_prompt_template = PairwiseMetricPromptTemplate()
        if isinstance(metric_prompt_template, str):
            self.metric_prompt_template: PairwiseMetricPromptTemplate | _FreeformPairwiseTemplate = (
                _FreeformPairwiseTemplate(metric_prompt_template, owner)
            )
        elif isinstance(metric_prompt_template, PairwiseMetricPromptTemplate):
            self.metric_prompt_template = metric_prompt_template
        else:
            raise MetricError(
                f"{owner}: metric_prompt_template must be a PairwiseMetricPromptTemplate or a str, "
                f"got {type(metric_prompt_template).__name__}"
            )
        self.seed = seed
        template = self.metric_prompt_template
        self.requires = tuple(
            v for v in [*template.case_variables, *template.agent_variables] if v in _OPTIONAL_FIELDS
        )
        self._schema = _schema("winner", ["A", "B", "tie"], "Which agent did better.")
        self._answer_format = _answer_format("winner", ["A", "B", "tie"])
        self._setup_judging(
            judge,
            num_samples=num_samples,
            cache=cache,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )

    def swapped(self, key: str, sample: int = 0) -> bool:
        """Whether agent B is shown first for this case key and sample (seeded, reproducible)."""
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return bool((digest[0] & 1) ^ (sample & 1))

    def render(self, a: ScoringContext, b: ScoringContext, *, swapped: bool = False) -> str:
        """The prompt the judge sees, with ``b`` shown first when ``swapped``."""
        template = self.metric_prompt_template
        case = {n: _row_value(a, n, self.name) for n in template.case_variables}
        first, second = (b, a) if swapped else (a, b)
        shown = [{n: _row_value(ctx, n, self.name) for n in template.agent_variables} for ctx in (first, second)]
        return f"{template.render(case, shown[0], shown[1])}\n\n{self._answer_format}"

    def _missing(self, a: ScoringContext, b: ScoringContext) -> str | None:
        for label, ctx in (("A", a), ("B", b)):
            if ctx.failure:
                return f"agent {label}'s run failed; nothing to compare"
            lacking = [f for f in self.requires if getattr(ctx, f) is None]
            if lacking:
                return f"agent {label}'s row has no {', '.join(lacking)}"
        return None

    async def ascore_pair(self, a: ScoringContext, b: ScoringContext, *, key: str | None = None) -> Score:
        """Judge agent A's row against agent B's row of the same case: 1 A better, 0 B better, 0.5 tie.

        ``key`` (default: the case id) seeds which agent is shown first. A failed run or a row
        lacking a field the template needs gives NaN (not a judge failure).
        """
        reason = self._missing(a, b)
        if reason is not None:
            return Score(NAN, explanation=reason)
        key = key if key is not None else a.case_id
        orders = [self.swapped(key, i) for i in range(self.num_samples)]
        prompts = [self.render(a, b, swapped=s) for s in orders]
        replies = await self._ask_all(prompts, self._schema)
        extra, usage = _cost_columns(replies)
        extra["swapped"] = orders[0]
        good: list[tuple[float, str]] = []
        for reply, swapped in zip(replies, orders):
            if reply.error is not None:
                continue
            read = parse_preference(reply.text, reply.parsed)
            if read is None:
                continue
            choice, explanation = read
            value = {"A": 1.0, "B": 0.0, "tie": 0.5}[choice]
            if swapped:  # the agent shown as "A" was agent B
                value = 1.0 - value
            good.append((value, explanation))
        if self.num_samples > 1:
            extra["samples_failed"] = len(replies) - len(good)
        if not good:
            first = replies[0]
            if first.error is not None:
                extra["error"] = first.error
            explanation = f"judge error: {first.error}" if first.error is not None else (first.text or "(empty answer)")
            return Score(NAN, explanation=explanation, extra=extra, failed=True, usage=usage)
        value, agreement = _aggregate([v for v, _ in good], "majority")
        if self.num_samples > 1:
            extra["agreement"] = agreement
        explanation = min(good, key=lambda g: abs(g[0] - value))[1]
        return Score(value, explanation=explanation, extra=extra, usage=usage)

    def score_pair(self, a: ScoringContext, b: ScoringContext, *, key: str | None = None) -> Score:
        """Sync twin of :meth:`ascore_pair`."""
        from ..runner import run_coroutine

        return run_coroutine(self.ascore_pair(a, b, key=key))

    async def acompare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Async twin of :meth:`compare_results`."""
        import pandas as pd

        from ..scoring import context_for

        def rows(result: EvalResult) -> dict[tuple[str, int], ScoringContext]:
            cases = {c.case_id: c for c in result.dataset}
            out: dict[tuple[str, int], ScoringContext] = {}
            for run in result.runs:
                case = cases[run.case_id]
                # Saved predictions live on the case, not in a run output.
                out[(run.case_id, run.trial)] = context_for(case, None if result.scored_saved_predictions else run)
                out[(run.case_id, run.trial)].failure = run.failure
            return out

        side_a, side_b = rows(result_a), rows(result_b)
        only_a, only_b = sorted(set(side_a) - set(side_b)), sorted(set(side_b) - set(side_a))
        if only_a or only_b:
            raise MetricError(
                f"PairwiseMetric {self.name!r}: the two results do not cover the same cases and trials "
                f"(only in A: {only_a[:5]}, only in B: {only_b[:5]}); evaluate both agents on the same dataset"
            )
        keys = list(side_a)
        scores = await asyncio.gather(
            *(self.ascore_pair(side_a[k], side_b[k], key=f"{k[0]}#{k[1]}") for k in keys)
        )
        table_rows = []
        for (case_id, trial), score in zip(keys, scores):
            row: dict[str, Any] = {"case_id": case_id, "trial": trial}
            row.update(_score_columns(self.name, score))
            table_rows.append(row)
        table = pd.DataFrame(table_rows)
        table.attrs["agents"] = (result_a.agent_name, result_b.agent_name)
        return table

    def compare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Judge every case (and trial) of two ``EvalResult``s of one dataset: one row each, ``<metric>/score`` 1 = A better.

        Columns: ``case_id``, ``trial``, ``<metric>/score``, ``/explanation``, ``/swapped``,
        ``/judge_latency``, ``/judge_calls``, ``/total_tokens`` (when known), ``/failed``.
        Summarize it with :meth:`summarize`.
        """
        from ..runner import run_coroutine

        return run_coroutine(self.acompare_results(result_a, result_b))

    def summarize(self, table: pd.DataFrame) -> dict[str, Any]:
        """Win rates of a :meth:`compare_results` table: ``<metric>/a_win_rate``, ``/b_win_rate``, ``/tie_rate``, ``/mean``."""
        import pandas as pd

        col = pd.to_numeric(table[f"{self.name}/score"], errors="coerce")
        judged = col.dropna()
        n = len(judged)

        def rate(mask: Any) -> float:
            return float(mask.sum() / n) if n else float("nan")

        out: dict[str, Any] = {
            "row_count": int(len(table)),
            f"{self.name}/mean": float(judged.mean()) if n else float("nan"),
            f"{self.name}/a_win_rate": rate(judged > 0.5),
            f"{self.name}/b_win_rate": rate(judged < 0.5),
            f"{self.name}/tie_rate": rate(judged == 0.5),
            f"{self.name}/nan_count": int(col.isna().sum()),
        }
        failed = table.get(f"{self.name}/failed")
        out[f"{self.name}/failure_count"] = int(failed.fillna(False).astype(bool).sum()) if failed is not None else 0
        tokens = table.get(f"{self.name}/total_tokens")
        if tokens is not None:
            out[f"{self.name}/total_tokens/sum"] = float(pd.to_numeric(tokens, errors="coerce").sum())
        return out

    def __repr__(self) -> str:
        return f"PairwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"


def _score_columns(name: str, score: Score) -> dict[str, Any]:
    """A score as ``<name>/...`` columns, the way the scoring engine writes them."""
    cols: dict[str, Any] = {f"{name}/score": score.value}
    if score.explanation is not None:
        cols[f"{name}/explanation"] = score.explanation
    for key, value in score.extra.items():
        cols[f"{name}/{key}"] = value
    cols[f"{name}/failed"] = bool(score.failed)
    if score.usage is not None:
        cols[f"{name}/total_tokens"] = score.usage.total_tokens
    return cols
