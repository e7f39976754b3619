"""levelfield: evaluate AI agents from any framework with one set of metrics.

    import levelfield as lf
    result = lf.evaluate("samples/home_automation/dataset.jsonl", my_agent,
                         metrics=["trajectory_exact_match", "rouge_l_sum"])
    result.summary_metrics
"""

from . import gate, metrics, report, stats, testing  # testing loads its names lazily: no LangChain import here
from .adapters.auto import as_agent
from .core.data.dataset import EvalCase, EvalDataset
from .formats import export_scores, load_dataset, load_traces, to_adk_evalset
from .core.errors import (
    AdapterError,
    AgentOutputError,
    AgentSpecError,
    ConfigError,
    ConfigTypeError,
    DatasetError,
    ExecutorError,
    LevelfieldError,
    MetricError,
    MissingExtraError,
    RecordError,
    RegressionError,
    TraceError,
    WriteError,
    TransientAgentError,
    RateLimitedError,
)
from .comparison import Comparison
from .core.data.config import RunConfig
from .core.stats.config import StatsConfig
from .evaluation import EvalTask, acompare, aevaluate, compare, evaluate
from .executors import RayExecutor
from .core.score.matching import ToolCallMatcher
from .core.data.protocol import AgentRequest, AgentRunnable
from .core.results.result import EvalResult
from .core.data.types import AgentOutput, Handoff, Message, ToolCall, Usage
from .core.data.types import AgentRun
from .simulation import TaskSuccess, UserSimulator, UserTurn

__version__ = "0.1.0"

__all__ = [
    "metrics",
    "stats",
    "gate",
    "RegressionError",
    "ExecutorError",
    "testing",
    "as_agent",
    "evaluate",
    "aevaluate",
    "compare",
    "acompare",
    "Comparison",
    "RunConfig",
    "StatsConfig",
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
]
