"""levelfield: evaluate AI agents from any framework with one set of metrics.

    import levelfield as lf
    result = lf.evaluate("samples/home_automation/dataset.jsonl", my_agent,
                         metrics=["trajectory_exact_match", "rouge_l_sum"])
    result.summary_metrics
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The error tree is light (no dependency) and what callers catch: it loads with the package.
from ._core.errors import (
    AdapterError,
    AgentOutputError,
    AgentSpecError,
    ConfigError,
    ConfigTypeError,
    DatasetError,
    ExecutorError,
    LevelfieldError,
    LevelfieldWarning,
    MetricError,
    MissingExtraError,
    RateLimitedError,
    RecordError,
    RegressionError,
    TraceError,
    TransientAgentError,
    WriteError,
)
from ._lazy import lazy_members

# Everything else loads on first use (PEP 562), so that ``import levelfield`` and the command line
# start without pandas, NumPy, SciPy or pydantic: name -> the module that holds it (a submodule
# when the name is one).
_LAZY = {
    "metrics": ".metrics",
    "stats": ".stats",
    "gate": ".gate",
    "report": ".report",
    "testing": ".testing",  # which loads its own names lazily: no LangChain import
    "tools": ".tools",  # likewise (cassettes, faults, their errors)
    "benchmarks": ".benchmarks",  # likewise (a benchmark's package loads when it is named)
    "as_agent": ".adapters.auto",
    "EvalCase": "._core.data.dataset",
    "EvalDataset": "._core.data.dataset",
    "export_scores": ".formats.otel",
    "load_dataset": ".formats.files",
    "load_traces": ".formats.traces",
    "to_adk_evalset": (".formats.adk", "write_evalset"),
    "Comparison": ".comparison._comparison",
    "certify_judge": "._core.stats.certify",
    "rows_to_label": "._core.stats.labelling",
    "RunConfig": "._core.data.config",
    "StatsConfig": "._core.stats.config",
    "JudgeConfig": ".judge.config",
    "panel_report": "._core.stats.panel",
    "EvalTask": "._entry.evaluation",
    "acompare": "._entry.comparing",
    "aevaluate": "._entry.evaluation",
    "compare": "._entry.comparing",
    "evaluate": "._entry.evaluation",
    "forget_limits": ("._core.run.learned", "forget"),
    "RayExecutor": ".executors.ray",
    "ToolCallMatcher": "._core.score.matching",
    "AgentRequest": "._core.data.protocol",
    "AgentRunnable": "._core.data.protocol",
    "EvalResult": "._core.results.result",
    "AgentOutput": "._core.data.types",
    "AgentRun": "._core.data.types",
    "Handoff": "._core.data.types",
    "Message": "._core.data.types",
    "ToolCall": "._core.data.types",
    "Usage": "._core.data.types",
    "TaskSuccess": ".simulation.task_success",
    "ToolCassette": ".tools.cassette",
    "Faults": ".tools.faults",
    "UserSimulator": ".simulation.llm",
    "UserTurn": "._core.run.conversation",
    # the warnings (one tree under LevelfieldWarning) and the errors that live beside their feature
    "BudgetWarning": "._core.run.notices",
    "MissingReferenceWarning": "._core.run.notices",
    "NoToolCallsWarning": "._core.run.notices",
    "ResumeWarning": "._core.run.notices",
    "A2APreflightWarning": "._core.run.preflight",
    "BlockingAgentWarning": "._core.run.watchdog",
    "NotLevelledWarning": ".tools.setup",
    "AllRunsFailedWarning": ".comparison._failures",
    "JudgeAnswersUnreadableWarning": ".comparison._failures",
    "EvaluatorsDifferWarning": ".comparison._comparability",
    "EvaluatorsDifferError": ".comparison._comparability",
    "UncertifiedJudgeError": "._core.stats.certify",
    "FolderInUseError": "._core.results.lock",
}

if TYPE_CHECKING:  # what type checkers and editors see: the same names, imported
    from . import benchmarks, gate, metrics, report, stats, testing, tools
    from ._core.data.config import RunConfig
    from ._core.data.dataset import EvalCase, EvalDataset
    from ._core.data.protocol import AgentRequest, AgentRunnable
    from ._core.data.types import AgentOutput, AgentRun, Handoff, Message, ToolCall, Usage
    from ._core.results.lock import FolderInUseError
    from ._core.results.result import EvalResult
    from ._core.run.conversation import UserTurn
    from ._core.run.notices import BudgetWarning, MissingReferenceWarning, NoToolCallsWarning, ResumeWarning
    from ._core.run.preflight import A2APreflightWarning
    from ._core.run.watchdog import BlockingAgentWarning
    from ._core.score.matching import ToolCallMatcher
    from ._core.stats.certify import UncertifiedJudgeError, certify_judge
    from ._core.stats.config import StatsConfig
    from ._core.stats.labelling import rows_to_label
    from ._core.stats.panel import panel_report
    from ._entry.comparing import acompare, compare
    from ._entry.evaluation import EvalTask, aevaluate, evaluate
    from .adapters.auto import as_agent
    from .comparison._comparability import EvaluatorsDifferError, EvaluatorsDifferWarning
    from .comparison._comparison import Comparison
    from .comparison._failures import AllRunsFailedWarning, JudgeAnswersUnreadableWarning
    from .executors.ray import RayExecutor
    from .formats.adk import write_evalset as to_adk_evalset
    from .formats.files import load_dataset
    from .formats.otel import export_scores
    from .formats.traces import load_traces
    from .judge.config import JudgeConfig
    from .simulation.llm import UserSimulator
    from .simulation.task_success import TaskSuccess
    from .tools.cassette import ToolCassette
    from .tools.faults import Faults
    from .tools.setup import NotLevelledWarning


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())


__version__ = "0.1.0"

__all__ = [
    "metrics",
    "stats",
    "gate",
    "RegressionError",
    "ExecutorError",
    "testing",
    "tools",
    "benchmarks",
    "as_agent",
    "evaluate",
    "aevaluate",
    "forget_limits",
    "compare",
    "acompare",
    "Comparison",
    "certify_judge",
    "rows_to_label",
    "RunConfig",
    "StatsConfig",
    "JudgeConfig",
    "panel_report",
    "report",
    "RayExecutor",
    "EvalTask",
    "EvalResult",
    "load_dataset",
    "to_adk_evalset",
    "load_traces",
    "export_scores",
    "EvalCase",
    "EvalDataset",
    "ToolCallMatcher",
    "AgentRequest",
    "AgentRunnable",
    "AgentOutput",
    "AgentRun",
    "Handoff",
    "Message",
    "ToolCall",
    "Usage",
    "UserSimulator",
    "UserTurn",
    "TaskSuccess",
    "ToolCassette",
    "Faults",
    "LevelfieldError",
    "DatasetError",
    "MetricError",
    "AdapterError",
    "AgentOutputError",
    "TransientAgentError",
    "RateLimitedError",
    "MissingExtraError",
    "ConfigError",
    "ConfigTypeError",
    "AgentSpecError",
    "RecordError",
    "TraceError",
    "WriteError",
    "EvaluatorsDifferError",
    "UncertifiedJudgeError",
    "FolderInUseError",
    # warnings
    "LevelfieldWarning",
    "BudgetWarning",
    "MissingReferenceWarning",
    "NoToolCallsWarning",
    "ResumeWarning",
    "A2APreflightWarning",
    "BlockingAgentWarning",
    "NotLevelledWarning",
    "AllRunsFailedWarning",
    "JudgeAnswersUnreadableWarning",
    "EvaluatorsDifferWarning",
]
