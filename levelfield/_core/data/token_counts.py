"""Token counts as each source reports them, read into one :class:`Usage` with one meaning.

Providers disagree on what their counts include. Read here, every source means the same thing:
``input_tokens`` is every prompt token (cache reads and writes included), ``output_tokens`` every
generated token (reasoning included), and the cache and reasoning counts are parts of those.

=====================  ==============================  ===============================================
source                 prompt count includes cache?    reasoning
=====================  ==============================  ===============================================
LangChain              yes (``input_token_details``)   part of ``output_tokens``
OpenAI                 yes (``prompt_tokens_details``) part of ``completion_tokens``
Anthropic (raw API)    no: reads and writes are added  part of ``output_tokens``
Gemini / google-genai  yes (``cachedContentTokenCount``) apart (``thoughtsTokenCount``): added
=====================  ==============================  ===============================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .types import Usage

__all__ = ["counted_usage", "langchain_usage", "chat_message_usage", "openai_usage", "anthropic_usage", "genai_usage",
           "usage_from_counts"]


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _get(source: Any, *keys: str) -> Any:
    """The first of ``keys`` a mapping or an object has (not None)."""
    for key in keys:
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if value is not None:
            return value
    return None


def _count(source: Any, *keys: str) -> int | None:
    return _int(_get(source, *keys)) if source is not None else None


def counted_usage(input_tokens: int, output_tokens: int, total_tokens: int | None = None, *,
                  cache_read: int | None = None, cache_write: int | None = None, reasoning: int | None = None,
                  model: Any = None) -> Usage:
    """A Usage from counts already in levelfield's meaning; a part larger than its total (a source's
    inconsistency) is capped at it, so odd counts cost a run its discount, never the run."""
    input_tokens, output_tokens = max(input_tokens, 0), max(output_tokens, 0)
    if cache_read is not None:
        cache_read = min(max(cache_read, 0), input_tokens)
    if cache_write is not None:
        cache_write = min(max(cache_write, 0), input_tokens - (cache_read or 0))
    if reasoning is not None:
        reasoning = min(max(reasoning, 0), output_tokens)
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                 total_tokens=total_tokens or input_tokens + output_tokens,
                 cache_read_tokens=cache_read, cache_write_tokens=cache_write, reasoning_tokens=reasoning,
                 model=str(model) if model else None)


def langchain_usage(meta: Any, model: str | None = None) -> Usage | None:
    """LangChain's ``usage_metadata`` (``input_tokens`` with ``input_token_details: {cache_read,
    cache_creation, ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}``, ``output_tokens`` with
    ``output_token_details: {reasoning}``); None without counts."""
    if not meta:
        return None
    inp, out = _count(meta, "input_tokens") or 0, _count(meta, "output_tokens") or 0
    details = _get(meta, "input_token_details") or {}
    write_parts = [_count(details, k) for k in ("cache_creation", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")]
    written = [w for w in write_parts if w is not None]
    return counted_usage(inp, out, _count(meta, "total_tokens"),
                         cache_read=_count(details, "cache_read"),
                         cache_write=sum(written) if written else None,
                         reasoning=_count(_get(meta, "output_token_details") or {}, "reasoning"),
                         model=model)


def chat_message_usage(message: Any, model: str | None = None) -> Usage | None:
    """The tokens of one LangChain-style chat message (``usage_metadata``) and the model that wrote
    it (``response_metadata["model_name"]`` or ``["model"]``, else ``model``); None without counts."""
    response = getattr(message, "response_metadata", None) or {}
    name = response.get("model_name") or response.get("model") if isinstance(response, Mapping) else None
    return langchain_usage(getattr(message, "usage_metadata", None), str(name) if name else model)


def openai_usage(usage: Any, model: str | None = None) -> Usage | None:
    """OpenAI's chat-completions ``usage`` (``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens`` with ``completion_tokens_details.reasoning_tokens``); None without counts."""
    if not usage:
        return None
    inp, out = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if inp is None and out is None:
        return None
    return counted_usage(inp or 0, out or 0, _count(usage, "total_tokens"),
                         cache_read=_count(_get(usage, "prompt_tokens_details"), "cached_tokens"),
                         reasoning=_count(_get(usage, "completion_tokens_details"), "reasoning_tokens"),
                         model=model)


def anthropic_usage(usage: Any, model: str | None = None) -> Usage | None:
    """Anthropic's messages ``usage``, whose ``input_tokens`` leaves out ``cache_read_input_tokens``
    and ``cache_creation_input_tokens``: they are added back; None without counts."""
    if not usage:
        return None
    fresh, out = _count(usage, "input_tokens"), _count(usage, "output_tokens")
    if fresh is None and out is None:
        return None
    read, write = _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")
    thinking = _count(_get(usage, "output_tokens_details"), "thinking_tokens")
    inp = (fresh or 0) + (read or 0) + (write or 0)
    return counted_usage(inp, out or 0, cache_read=read, cache_write=write, reasoning=thinking, model=model)


def genai_usage(meta: Any, model: str | None = None) -> Usage | None:
    """Gemini's ``usageMetadata`` / google-genai's ``usage_metadata`` (camelCase or snake_case):
    ``promptTokenCount`` (with ``toolUsePromptTokenCount`` added) includes ``cachedContentTokenCount``;
    ``candidatesTokenCount`` leaves out ``thoughtsTokenCount``, which is added; None without counts."""
    if not meta:
        return None
    prompt = _count(meta, "prompt_token_count", "promptTokenCount")
    candidates = _count(meta, "candidates_token_count", "candidatesTokenCount")
    thoughts = _count(meta, "thoughts_token_count", "thoughtsTokenCount")
    if prompt is None and candidates is None and thoughts is None:
        return None
    tool_prompt = _count(meta, "tool_use_prompt_token_count", "toolUsePromptTokenCount") or 0
    return counted_usage((prompt or 0) + tool_prompt, (candidates or 0) + (thoughts or 0),
                         _count(meta, "total_token_count", "totalTokenCount"),
                         cache_read=_count(meta, "cached_content_token_count", "cachedContentTokenCount"),
                         # Gemini bills no cache writes; levelfield's A2A server passes other models' on.
                         cache_write=_count(meta, "cache_write_tokens"),
                         reasoning=thoughts, model=model)


def usage_from_counts(raw: Any, model: str | None = None) -> Usage | None:
    """Counts of any of the shapes above, told apart by their keys (levelfield's own
    ``{input_tokens, output_tokens, cache_read_tokens, ...}`` too); None when none is recognised."""
    if not raw:
        return None
    if isinstance(raw, Usage):
        return raw
    keys = set(raw) if isinstance(raw, Mapping) else {k for k in dir(raw) if not k.startswith("_")}
    if keys & {"prompt_token_count", "promptTokenCount", "candidates_token_count", "candidatesTokenCount"}:
        return genai_usage(raw, model)
    if keys & {"prompt_tokens", "completion_tokens"}:
        return openai_usage(raw, model)
    if keys & {"cache_read_input_tokens", "cache_creation_input_tokens"}:
        return anthropic_usage(raw, model)
    if keys & {"input_token_details", "output_token_details"}:
        return langchain_usage(raw, model)
    if keys & {"input_tokens", "output_tokens"}:
        # levelfield's own names, or OpenAI's Responses API (``input_tokens_details.cached_tokens``,
        # ``output_tokens_details.reasoning_tokens``), whose input also counts cached tokens.
        read = _count(raw, "cache_read_tokens")
        reasoning = _count(raw, "reasoning_tokens")
        return counted_usage(_count(raw, "input_tokens") or 0, _count(raw, "output_tokens") or 0,
                             _count(raw, "total_tokens"),
                             cache_read=read if read is not None else _count(_get(raw, "input_tokens_details"), "cached_tokens"),
                             cache_write=_count(raw, "cache_write_tokens"),
                             reasoning=reasoning if reasoning is not None else _count(_get(raw, "output_tokens_details"),
                                                                                    "reasoning_tokens"),
                             model=model or _get(raw, "model"))
    return None
