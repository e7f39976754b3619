"""The judge client: a chat model asked for a verdict, with its own (adaptive) concurrency limit, retries, timeout and an on-disk answer cache.

A judge is a LangChain chat model object, a ``"provider:model"`` string resolved by LangChain's
``init_chat_model``, a function ``prompt -> answer text`` (sync or async), or an agent that
answers prompts (a levelfield agent, e.g. ``lf.as_agent("http://host/")`` for an A2A agent, or an
``http(s)://`` URL of one). :class:`Judge` wraps one: it knows the model's identity (what the cache is
keyed by), limits its concurrent calls per event loop, retries transient errors with backoff,
asks for structured output when the model can give it, and never raises for a judge error
(a :class:`JudgeReply` carries it instead). :class:`~levelfield.judge.cache.JudgeCache` keeps answers on disk so a
re-run does not pay twice; :func:`resolve_judge` shares one ``Judge`` among metrics given the same model
and settings. Nothing here knows about prompts, ratings or metrics. LangChain is imported only
when a judge is resolved or called, never at ``import levelfield``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._core.data.jsonsafe import clean_strings, clean_text
from .._core.data.token_counts import chat_message_usage
from .._core.data.types import Usage, content_text
from .._core.errors import ContainedBaseException, MetricError, MissingExtraError, message_of, type_name
from .._core.run import endpoints, limits
from .._core.run.interrupts import watching as watching_interrupts
from .._core.run.retry import call_with_retries, is_transient
from .._core.run.threads import run_sync
from .cache import JudgeCache
from .code_identity import code_identity
from .model_identity import model_identity
from .probability import TokenLogprob, as_judge_answer, token_logprobs

__all__ = [
    "Judge",
    "JudgeReply",
    "resolve_judge",
    "is_transient_judge_error",
    "TextJudge",
    "as_judge_model",
]

# A judge's call settings, defined once: every judged metric and Judge() default to these.
JUDGE_MAX_CONCURRENCY = 8
"""Judge calls in flight at once, per judge model."""
JUDGE_RETRIES = 3
"""Retries of a judge call that hit a rate limit or a server error."""
JUDGE_BACKOFF = 1.0
"""Seconds the first retry waits at most; doubles with each retry, the wait drawn uniformly below it."""
JUDGE_TIMEOUT = 30.0
"""Seconds per judge call. A judge call answers in seconds; a judge that hangs is cut here and retried
(``JUDGE_RETRIES``), so a hanging judge fails its row within about 2 minutes (4 calls x 30 s, and the
backoff between them), not the 8 a 120 s timeout took. A slow reasoning judge wants a longer one:
``lf.JudgeConfig(timeout=120)``."""


_PROVIDER_ALIASES = {"vertex": "google_vertexai", "vertexai": "google_vertexai"}

_HOW_TO_GIVE_A_JUDGE = (
    "pass judge=<a LangChain chat model> (e.g. ChatOpenAI(model='gpt-4o')), "
    "judge='provider:model' (e.g. 'openai:gpt-4o', 'anthropic:claude-sonnet-4-5', "
    "'google_vertexai:gemini-2.5-flash'; each needs its LangChain package, e.g. langchain-openai), "
    "a function prompt -> answer text, or an A2A agent (lf.as_agent('http://host/') or its URL); "
    "on the command line: --judge provider:model, --judge module:attr or --judge http://host/"
)


class TextJudge:
    """A judge that is not a chat model: a function ``prompt -> text`` (sync or async) or an agent, asked in plain text.

    An agent (anything with ``arun(AgentRequest)``, e.g. an A2A agent) gets the prompt as the user's
    message and its final response is the answer. A sync function runs on a worker thread, as a
    sync agent does, so the judge's timeout holds for it too and calls overlap up to the judge's
    concurrency. Its ``target`` (the function's qualified name or the agent's name and URL) names
    it; its ``code`` (a hash of the function's code, defaults and closure, or the agent's card)
    is, with the target, what the cache is keyed by: a judge whose body changed is asked again.
    """

    def __init__(self, target: Any) -> None:
        self._target = target
        url = getattr(target, "url", None) or getattr(target, "card_url", None)
        name = getattr(target, "__qualname__", None) or getattr(target, "name", None) or type(target).__qualname__
        module = getattr(target, "__module__", None) or type(target).__module__
        self.target = f"{module}.{name}" + (f" at {url}" if url else "")
        self.code = code_identity(target)
        """What the judge does: its code's hash (see :func:`levelfield.judge.code_identity.code_identity`)."""
        self.cacheable = getattr(target, "cacheable", True)
        """False for a judge whose answers are not worth keeping (a scripted one, ``lf.testing.ScriptedJudge``)."""
        fn = target if inspect.isfunction(target) or inspect.ismethod(target) else getattr(target, "__call__", target)  # noqa: B004 (the method, not a test)
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(target)

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"target": self.target, "code": self.code}

    async def ainvoke(self, prompt: str) -> str:
        """The judge's answer to ``prompt``, as text."""
        if hasattr(self._target, "arun"):
            from .._core.data.protocol import AgentRequest

            out = await self._target.arun(AgentRequest(prompt=prompt, case_id="judge"))
            return out.response
        if self._is_async:
            answer = await self._target(prompt)
        else:
            # Off the event loop: a judge that blocks (or hangs) holds one thread, not every row.
            answer = await run_sync(self._target, prompt)
            if inspect.isawaitable(answer):
                answer = await answer
        answer = as_judge_answer(answer)  # a dict, a chat message or a google-genai response: its text (and logprobs)
        if not isinstance(answer, str) and not isinstance(getattr(answer, "content", None), str):
            raise MetricError(f"judge function {self.target} returned {type(answer).__name__}; it must return the "
                              "answer text (or a dict, a chat message or a google-genai response)")
        return answer


def as_judge_model(judge: Any) -> Any:
    """The object :class:`Judge` calls: a chat model as is, a ``provider:model`` string resolved, an
    ``http(s)://`` URL as an A2A agent, an agent or a function wrapped in a :class:`TextJudge`."""
    if isinstance(judge, str):
        if judge.startswith(("http://", "https://")):
            from ..adapters.auto import as_agent

            return TextJudge(as_agent(judge))
        return _init_chat_model(judge)
    if hasattr(judge, "ainvoke"):
        return judge
    if hasattr(judge, "arun") or callable(judge):
        return TextJudge(judge)
    raise MetricError(f"judge must be a chat model, a function, an agent or a 'provider:model' string, got "
                      f"{type(judge).__name__}; " + _HOW_TO_GIVE_A_JUDGE)

def is_transient_judge_error(exc: BaseException) -> bool:
    """Whether a judge call that raised ``exc`` is worth retrying (rate limits, 5xx, timeouts, dropped connections)."""
    return is_transient(exc, provider_errors=True, timeouts=True)


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


def _message_text(message: Any) -> str:
    """The text of a chat message, whether its content is a string or a list of content blocks."""
    return content_text(getattr(message, "content", message))


def _message_usage(message: Any, model: Any = None) -> Usage | None:
    """The tokens of a judge's reply, with the model's name (the reply's own, else the chat model's)."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return chat_message_usage(message, name if isinstance(name, str) else None)


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
    logprobs: list[TokenLogprob] | None = None
    """The answer's tokens with their log-probabilities, when the model gave them (see ``judge.probability``)."""


def _safe(reply: JudgeReply) -> JudgeReply:
    """``reply`` with its text writable: lone surrogates (a truncated model answer) replaced by
    U+FFFD where the answer enters, as an agent's text is, so the row, its explanation, the cache,
    the journal, ``metrics_table`` and every export can encode it."""
    if isinstance(reply.text, str):
        reply.text = clean_text(reply.text)
    if reply.parsed is not None:
        reply.parsed = clean_strings(reply.parsed)
    return reply


class Judge:
    """A chat model used as a judge: its identity (for the cache), its own concurrency limit, retries and timeout.

    Give one ``Judge`` to several metrics to share one limit; metrics given the same model
    object with the same settings share one automatically. ``max_concurrency`` is the ceiling:
    with ``adaptive`` (the default) the calls in flight follow the provider's rate limits, as an
    agent's do (``RunConfig.adaptive``); ``requests_per_minute`` / ``tokens_per_minute`` bound the rate.
    ``structured_output``: None uses the model's ``with_structured_output`` when it has one and
    parses text otherwise; True or False forces one way.
    """

    def __init__(
        self,
        model: Any,
        *,
        max_concurrency: int = JUDGE_MAX_CONCURRENCY,
        retries: int = JUDGE_RETRIES,
        backoff: float = JUDGE_BACKOFF,
        timeout: float | None = JUDGE_TIMEOUT,
        structured_output: bool | None = None,
        adaptive: bool = True,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        if model is None:
            raise MetricError(f"a judge is needed: {_HOW_TO_GIVE_A_JUDGE}")
        self.spec = model if isinstance(model, str) else None
        model = as_judge_model(model)
        if max_concurrency < 1:
            raise MetricError(f"judge max_concurrency must be >= 1, got {max_concurrency}")
        if retries < 0:
            raise MetricError(f"judge retries must be >= 0, got {retries}")
        for option, rate in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
            if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int) or rate < 1):
                raise MetricError(f"judge {option} must be a whole number >= 1 or None, got {rate!r}")
        self.model = model
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.structured_output = structured_output
        self.adaptive = adaptive
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.identity = model_identity(model)
        self.cacheable = getattr(model, "cacheable", True) is not False
        """Whether answers are kept in the cache (a scripted judge's are not: they cost nothing)."""
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, limits.EndpointLimit] = (
            weakref.WeakKeyDictionary()
        )
        self._structured: dict[str, Any] = {}
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[JudgeReply]]] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        label = self.spec or type(self.model).__name__
        return f"Judge({label!r}, max_concurrency={self.max_concurrency}, retries={self.retries})"

    @property
    def label(self) -> str:
        """The judge as people name it: its ``provider:model`` string, the model's name, the function's or agent's name."""
        model = self.model
        name = self.spec or getattr(model, "model_name", None) or getattr(model, "model", None)
        return name if isinstance(name, str) else getattr(model, "target", type(model).__name__)

    @property
    def endpoint(self) -> str:
        """What this judge's calls go to, for rate limits: ``judge <model>``."""
        return f"judge {self.label}"

    def _limit(self) -> limits.EndpointLimit:
        """The limit of this judge's calls: the evaluation's (shared with other judges of the model, and
        reported with the agents'), else this judge's own; one per event loop."""
        settings: dict[str, Any] = {"adaptive": self.adaptive, "requests_per_minute": self.requests_per_minute,
                                    "tokens_per_minute": self.tokens_per_minute}
        registry = endpoints.current()
        if registry is not None:
            return registry.for_service("judge", self.endpoint, self.max_concurrency, **settings)
        loop = asyncio.get_running_loop()
        limit = self._limits.get(loop)
        if limit is None:
            limit = self._limits[loop] = limits.EndpointLimit(self.endpoint, self.max_concurrency, **settings)
        return limit

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
            return JudgeReply(text=_message_text(message), usage=_message_usage(message, self.model),
                              logprobs=token_logprobs(getattr(message, "response_metadata", None)))
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
        return JudgeReply(text=text, parsed=dict(parsed) if parsed is not None else None, usage=_message_usage(raw, self.model),
                          logprobs=token_logprobs(getattr(raw, "response_metadata", None)))

    def _error_text(self, exc: BaseException, took: float) -> str:
        """A judge call's error as a row shows it: ``Type: message``; a call cut by the judge's timeout says so."""
        if isinstance(exc, ContainedBaseException):  # a BaseException from a sync judge's thread
            return clean_text(message_of(exc))
        text = message_of(exc)
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not text:
            if self.timeout and took >= self.timeout * 0.99:
                text = (f"the judge gave no answer within its timeout of {self.timeout:g} s "
                        "(judge_config=lf.JudgeConfig(timeout=...) on the metric waits longer)")
            else:
                text = "timed out"
        return clean_text(f"{type_name(exc)}: {text}")

    async def ask(
        self,
        prompt: str,
        schema: dict[str, Any],
        *,
        cache: JudgeCache | None = None,
        settings: Mapping[str, Any] | None = None,
        usable: Callable[[JudgeReply], bool] | None = None,
    ) -> JudgeReply:
        """One judge answer to ``prompt``: from the cache, or from the model with retries; never raises for judge errors.

        ``usable(reply)`` says whether an answer can be read (e.g. it holds a rating). Only usable
        answers are cached, so an unparseable answer is asked again next time, never replayed
        as a permanent NaN; a cached answer that is not usable is asked again too. Whatever the
        judge raises (a ``KeyboardInterrupt`` of its own, ``SystemExit``) is the reply's error; only
        the user's Ctrl-C stops the evaluation.
        """
        with watching_interrupts():
            return await self._ask(prompt, schema, cache, settings, usable)

    async def _ask(
        self,
        prompt: str,
        schema: dict[str, Any],
        cache: JudgeCache | None,
        settings: Mapping[str, Any] | None,
        usable: Callable[[JudgeReply], bool] | None,
    ) -> JudgeReply:
        runnable = self._structured_runnable(schema)
        mode = "structured" if runnable is not None else "text"
        if cache is None or not self.cacheable:
            return await self._fetch(prompt, runnable, None, None, usable)
        key = cache.key(
            {"judge": self.identity, "prompt": prompt, "mode": mode, "schema": schema, "settings": dict(settings or {})}
        )
        hit = cache.get(key)
        if hit is not None:
            reply = JudgeReply(text=hit["text"], parsed=hit["parsed"], cached=True, logprobs=hit.get("logprobs"))
            if usable is None or usable(reply):
                return reply
        # The same question already on its way (e.g. one answer judged in several trials):
        # wait for that answer instead of paying for it twice.
        pending = self._pending.setdefault(asyncio.get_running_loop(), {})
        if key in pending:
            reply = await asyncio.shield(pending[key])
            return replace(reply, usage=None, latency=0.0, calls=0, cached=reply.error is None)
        future: asyncio.Future[JudgeReply] = asyncio.ensure_future(self._fetch(prompt, runnable, cache, key, usable))
        pending[key] = future
        try:
            return await future
        finally:
            pending.pop(key, None)

    async def _fetch(
        self,
        prompt: str,
        runnable: Any | None,
        cache: JudgeCache | None,
        key: str | None,
        usable: Callable[[JudgeReply], bool] | None,
    ) -> JudgeReply:
        """Ask the model, retrying transient errors with jittered exponential backoff; cache a usable answer.

        Rate-limit answers go to the judge's endpoint limit (adaptive concurrency): absorbed ones are
        waited out and asked again without spending a retry."""

        async def call() -> JudgeReply:
            once = self._call_once(prompt, runnable)
            return _safe(await (asyncio.wait_for(once, self.timeout) if self.timeout else once))

        tried = await call_with_retries(
            call,
            retries=self.retries,
            backoff=self.backoff,
            transient=is_transient_judge_error,
            limit=self._limit(),
            timeout=self.timeout,
            tokens=_reply_tokens,
        )
        exc = tried.error
        if exc is not None:
            # The evaluation's own cancellation stops it (Python 3.10 cannot tell a CancelledError
            # the judge raised itself from it: stop too); the judge's own is that row's judge failure.
            if isinstance(exc, asyncio.CancelledError) and getattr(asyncio.current_task(), "cancelling", None) is None:
                raise exc
            # Only an Exception's time says whether the judge's timeout cut it.
            took = tried.latency if isinstance(exc, Exception) else 0.0
            return JudgeReply(error=self._error_text(exc, took), latency=tried.total, calls=tried.calls)
        reply = tried.value
        assert reply is not None
        reply.latency, reply.calls = tried.total, tried.calls
        if cache is not None and key is not None and isinstance(reply.text, str) and (usable is None or usable(reply)):
            record: dict[str, Any] = {"text": reply.text, "parsed": reply.parsed}
            if reply.logprobs:
                record["logprobs"] = [[t.token, t.logprob, [list(a) for a in t.top]] for t in reply.logprobs]
            cache.put(key, record)
        return reply


def _reply_tokens(reply: JudgeReply) -> int | None:
    return reply.usage.total_tokens if reply.usage is not None else None


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
