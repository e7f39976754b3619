"""The LLM judge: any chat model rates one agent's answer (pointwise) or picks the better of two (pairwise).

A judge is a LangChain chat model object or a ``"provider:model"`` string resolved by LangChain's
``init_chat_model`` (``"openai:gpt-4o"``, ``"anthropic:claude-sonnet-4-5"``,
``"google_vertexai:gemini-2.5-flash"``, ``"ollama:llama3.1"``...). No judge is ever chosen for you.

Judge calls are kept apart from the agent's: each metric writes ``<metric>/judge_latency``,
``<metric>/judge_calls`` and ``<metric>/total_tokens`` (plus input/output tokens when the model
reports them). Each judge has its own concurrency limit and retries transient errors with
backoff. Usable answers are cached on disk (``.levelfield-cache/judge/`` under the working
directory, or ``$LEVELFIELD_CACHE_DIR/judge``) keyed by every setting of the judge model, the
rendered prompt and the sample, so a re-run does not pay twice. A row whose answers cannot be
parsed is NaN and a judge failure (``<metric>/failed``), never a 0: ``<metric>/error`` names the
format expected, ``<metric>/unreadable_answer`` keeps the answer, and it is not cached (the next
run asks again); ``evaluate``/``compare`` warn when it is most rows of a metric
(``lf.JudgeAnswersUnreadableWarning``). docs/judges.md shows each format.

The package sits above levelfield's private core and talks to it only through public names; core never
imports it. Its modules, each used by the next through its public names:

- ``client``: :class:`Judge` (the model, its concurrency limit, retries, timeout); ``model_identity``: what
  makes two judge models the same (the cache's key); ``cache``: :class:`JudgeCache`, answers kept on disk;
- ``answers``: reading ratings and preferences out of what a judge wrote;
- ``prompts``: the prompt templates, rendering a row into them, the answer format asked for;
- ``metrics``: :class:`JudgedMetric` (the verdict, aggregation and cost columns, written once) and
  :class:`PointwiseMetric`; ``pairwise``: :class:`PairwiseMetric`;
- ``panel``: panels of judges (``judges=[...]``): each judge's votes kept per row, the verdict their
  majority, a failing judge recorded on its row (what a panel is worth: ``lf.panel_report``);
- ``judged``: prebuilt judged metrics for agents; importing it registers their names, so that
  ``metrics=["safety"]`` says how to build them with a judge;
- ``databricks``: Databricks' judged agent-evaluation metrics (correctness, groundedness...), registered alike;
- ``rubrics``: rubrics (properties judged yes or no), reading them, reading verdicts back, combining samples;
- ``adk``: ADK's judged criteria (``final_response_match_v2``, the rubric-based ones, ``hallucinations_v1``,
  ``safety_v1``, the ``multi_turn_*`` ones...), registered as criteria and as names usable with a judge;
- ``provenance``: what a judged metric tells the run record of its judge (model, settings, prompt and rubric hashes);
- ``vertex``: Vertex AI's rubric metrics by their Vertex names (``GENERAL_QUALITY`` with rubrics generated
  per case, ``MULTI_TURN_*``, ``HALLUCINATION``), computed locally with your judge.

LangChain is imported only when a judge is resolved or called, never at ``import levelfield``.
"""

from . import adk, databricks, judged, vertex
from .answers import parse_preference, parse_rating
from .cache import default_cache_dir
from .client import JudgeReply, is_transient_judge_error, resolve_judge
from .metrics import JudgedMetric

__all__ = [
    "adk",
    "vertex",
    "judged",
    "databricks",
    "JudgeReply",
    "JudgedMetric",
    "resolve_judge",
    "default_cache_dir",
    "parse_rating",
    "parse_preference",
    "is_transient_judge_error",
]
