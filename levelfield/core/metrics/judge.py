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

This module is the public face of judged metrics; the code lives in ``judge_client`` (calling the
judge model), ``judge_prompts`` (prompt templates), ``judge_answers`` (reading the answers),
``pointwise`` and ``pairwise`` (the metrics).
"""

from .judge_answers import parse_preference, parse_rating
from .judge_client import Judge, JudgeCache, JudgeReply, default_cache_dir, is_transient_judge_error, resolve_judge
from .judge_prompts import PairwiseMetricPromptTemplate, PointwiseMetricPromptTemplate
from .pairwise import PairwiseMetric
from .pointwise import PointwiseMetric

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
