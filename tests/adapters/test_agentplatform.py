"""google-cloud-aiplatform 2.x's ``agentplatform`` names: the same templates and clients as ``vertexai``'s.

``agentplatform.frameworks.adk.AdkApp`` and ``agentplatform.frameworks.langgraph.LanggraphAgent``
run offline as the ``vertexai.agent_engines`` templates do; an ``agentplatform.Client(...).runtimes``
agent (a ``Runtime``) is a deployed agent."""

from __future__ import annotations

from pathlib import Path

import google.auth
import pytest

import levelfield as lf
from levelfield.adapters import AgentEngineAgent
from samples.home_automation.agents import agent_engine_agent as sample

agentplatform = pytest.importorskip("agentplatform", reason="google-cloud-aiplatform without the agentplatform names")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

DATASET = Path(__file__).resolve().parents[2] / "samples" / "home_automation" / "dataset.jsonl"


@pytest.fixture(autouse=True)
def _init() -> None:
    agentplatform.init(project=sample.PROJECT, location=sample.LOCATION,
                       credentials=google.auth.credentials.AnonymousCredentials())


def test_an_agentplatform_adk_app_is_evaluated_as_the_vertexai_one_is():
    from agentplatform.frameworks.adk import AdkApp
    from google.adk.agents import LlmAgent

    root = LlmAgent(name="home_automation_careful", model=sample.PolicyLlm(model="home-automation-careful", style="careful"),
                    instruction=sample.INSTRUCTION, tools=sample.safe_tools())
    app = AdkApp(agent=root)
    assert isinstance(lf.as_agent(app), AgentEngineAgent)
    result = lf.evaluate(str(DATASET), app, ["trajectory_exact_match"], progress=False)
    assert result.summary_metrics["failure/count"] == 0
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert {c.agent for r in result.runs for c in r.output.trajectory} == {"home_automation_careful"}


def test_an_agentplatform_langgraph_agent_is_evaluated_as_the_vertexai_one_is():
    from agentplatform.frameworks.langgraph import LanggraphAgent

    graph = LanggraphAgent(model="home-automation-careful", tools=sample.safe_tools(),
                           model_builder=sample._model_builder("careful"))
    assert lf.as_agent(graph).operation == "query"
    result = lf.evaluate(str(DATASET), graph, ["trajectory_exact_match"], progress=False)
    assert result.summary_metrics["failure/count"] == 0
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_an_agent_runtime_is_taken_as_a_deployed_agent_named_by_its_resource():
    from agentplatform import types

    runtime = types.Runtime(api_resource=types.ReasoningEngine(
        name="projects/p/locations/us-central1/reasoningEngines/7", display_name="heim"))
    # No operations without the deployed spec: the error says so, naming the agent by its display name.
    with pytest.raises(lf.ConfigTypeError, match=r"agent 'heim' \(Runtime\) has none of the operations"):
        lf.as_agent(runtime)
