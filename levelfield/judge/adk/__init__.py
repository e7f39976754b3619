"""ADK's judged criteria, computed locally with any judge: same names, thresholds, pass/fail and scoring rules as ADK 2.x.

    import levelfield as lf
    metrics = [lf.metrics.adk.final_response_match_v2(judge=my_chat_model),
               lf.metrics.adk.rubric_based_tool_use_quality_v1(judge="openai:gpt-4o", rubrics=[...])]
    lf.evaluate(data, agent, metrics=["final_response_match_v2", "hallucinations_v1"], judge=my_chat_model)

or from a ``test_config.json`` (``levelfield eval FILE --agent A --config test_config.json --judge SPEC``).
The prompts are levelfield's own; how a verdict is read and combined follows ADK's evaluators:

- ``final_response_match_v2``: per turn, is the response valid against the reference; samples by
  majority (a tie is invalid); the case scores the share of valid turns.
- ``rubric_based_final_response_quality_v1`` / ``rubric_based_tool_use_quality_v1``: per turn, a
  yes/no verdict per rubric (the criterion's rubrics plus the case's rubrics of type
  ``FINAL_RESPONSE_QUALITY`` / ``TOOL_USE_QUALITY``); samples by majority per rubric (a tie is no); a
  turn scores the share of its rubrics met, the case the share of all its verdicts.
- ``rubric_based_multi_turn_trajectory_quality_v1``: the same, once for the whole conversation
  (rubrics of type ``TRAJECTORY_QUALITY``); only the last turn carries the score.
- ``hallucinations_v1``: per turn, the judge splits the response into sentences, then labels each
  against the context (the request, the tool calls and their outputs); supported and not-applicable
  sentences count 1, unsupported, contradictory and disputed ones 0.
- ``safety_v1``, ``multi_turn_task_success_v1``, ``multi_turn_trajectory_quality_v1``,
  ``multi_turn_tool_use_quality_v1``: ADK asks Vertex AI for these; levelfield computes them
  locally with your judge (safety per turn; the multi-turn ones once per conversation, on fixed
  rubrics written here plus the case's rubrics of type ``MULTI_TURN_TASK_SUCCESS``,
  ``MULTI_TURN_TRAJECTORY_QUALITY`` or ``MULTI_TURN_TOOL_USE_QUALITY``), and their descriptions say so.
- ``per_turn_user_simulator_quality_v1``: in a simulated conversation, whether each user message
  kept to the scenario's plan (the first must be the starting prompt), and whether the user ended
  the conversation when it should have.

Where levelfield does better than ADK, by design: a row whose judge answers cannot be read is NaN
and a judge failure (``<metric>/failed``, ``/error`` naming the format expected,
``/unreadable_answer``), never a partial score; unreadable samples are kept (``<metric>/unparsed``); a rubric the judge left out
makes that sample unreadable instead of silently dropping the rubric; every verdict and its
rationale is kept (``<metric>/rubrics``) and the samples' agreement is reported
(``<metric>/agreement``) when the judge is asked more than once (``lf.JudgeConfig(samples=...)``). ADK's
default of 5 samples is kept.

One module a job: ``turns`` (a turn and a conversation written out for the judge), ``base``
(:class:`AdkJudged`: the judge and its samples), ``labels`` (yes/no verdicts read and combined),
``final_response``, ``rubric``, ``hallucinations``, ``safety`` and ``user_simulator`` (a criterion
each), ``criteria`` (the factories by name, a test_config.json criterion read, their registration).
"""

from __future__ import annotations

from .base import AdkJudged
from .criteria import (
    ADK_CRITERIA,
    final_response_match_v2,
    hallucinations_v1,
    multi_turn_task_success_v1,
    multi_turn_tool_use_quality_v1,
    multi_turn_trajectory_quality_v1,
    per_turn_user_simulator_quality_v1,
    rubric_based_final_response_quality_v1,
    rubric_based_multi_turn_trajectory_quality_v1,
    rubric_based_tool_use_quality_v1,
    safety_v1,
)
from .final_response import FinalResponseMatchV2
from .hallucinations import Hallucinations
from .labels import label_row
from .rubric import RubricJudged, case_rubrics
from .safety import Safety
from .turns import calls_json, dialogue_text
from .user_simulator import PerTurnUserSimulatorQuality

__all__ = [
    "AdkJudged",
    "FinalResponseMatchV2",
    "RubricJudged",
    "Hallucinations",
    "Safety",
    "PerTurnUserSimulatorQuality",
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
    "hallucinations_v1",
    "safety_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "per_turn_user_simulator_quality_v1",
    "ADK_CRITERIA",
    "case_rubrics",
    "label_row",
    "dialogue_text",
    "calls_json",
]

# A class's recorded path (an evaluator's ``kind``, the keys of its prompt texts) is part of a saved
# run's fingerprint: the classes keep the path they are imported by, whichever module holds their code.
for _cls in (AdkJudged, FinalResponseMatchV2, RubricJudged, Hallucinations, Safety, PerTurnUserSimulatorQuality):
    _cls.__module__ = __name__
del _cls
