"""Vertex AI Agent Engine local templates over the home-automation tools, runnable offline.

Three templates, each driven by a deterministic model that follows the samples' shared
``decide`` rules, so they take the same steps as ``careful_agent`` (or ``hasty_agent``):

- ``make_adk_app(style)``: an ``agent_engines.AdkApp`` around an ADK ``LlmAgent`` whose model is
  ``PolicyLlm``, an ADK ``BaseLlm`` that answers from the rules instead of calling Gemini;
- ``make_langgraph_agent(style)``: an ``agent_engines.LanggraphAgent`` whose ``model_builder``
  returns the scripted chat model of ``langgraph_agent.make_model``;
- ``make_langchain_agent(style)``: an ``agent_engines.LangchainAgent`` (an ``AgentExecutor``)
  with the same model, returning its ``intermediate_steps``.

``agent`` is ``make_adk_app()``. Evaluate it with
``lf.evaluate("samples/home_automation/dataset.jsonl", agent, metrics=[...])``; levelfield wraps
it in ``AgentEngineAgent``. ``vertexai.init`` runs with anonymous credentials: local templates
need a project and location but never call Google Cloud.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable
from typing import Any

import google.auth.credentials
import vertexai
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from vertexai import agent_engines

from ..policy import decide
from ..tools import TOOLS, ToolError

__all__ = [
    "PROJECT",
    "LOCATION",
    "PolicyLlm",
    "init_vertex",
    "safe_tools",
    "make_adk_app",
    "make_langgraph_agent",
    "make_langchain_agent",
    "agent",
]

PROJECT = "levelfield-samples"
LOCATION = "us-central1"
INSTRUCTION = "You control the devices, temperatures and schedules of a home. Use the tools."


def init_vertex() -> None:
    """Point the Vertex SDK at a placeholder project; anonymous credentials, so no look-up is made."""
    vertexai.init(project=PROJECT, location=LOCATION, credentials=google.auth.credentials.AnonymousCredentials())


def _safe(tool: Callable[..., str]) -> Callable[..., str]:
    # A tool error becomes the text handed back to the model (as call_tool does), so every
    # framework sees "Error: ..." rather than aborting the run. wraps() keeps the signature,
    # type hints and docstring the frameworks build the tool's schema from.
    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return tool(*args, **kwargs)
        except ToolError as exc:
            return f"Error: {exc}"

    return wrapper


def safe_tools() -> list[Callable[..., str]]:
    """The sample tools, each returning ``"Error: ..."`` instead of raising."""
    return [_safe(t) for t in TOOLS]


def _count(text: str) -> int:
    return len(text.split())


def _text(content: types.Content) -> str:
    return "".join(p.text for p in content.parts or [] if p.text and not p.thought)


class PolicyLlm(BaseLlm):
    """An ADK model that answers from the samples' ``decide`` rules: no network, no randomness.

    It reads the request as Gemini would: the last user text is the prompt, and the function
    responses after it, grouped by the model turn that asked for them, are the tool outputs.
    Token usage is reported as word counts, so usage can be checked.
    """

    model: str = "home-automation-careful"
    style: str = "careful"
    """``"careful"`` or ``"hasty"`` (see ``policy.decide``)."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"home-automation-.*"]

    def _decide(self, contents: list[types.Content]) -> Any:
        start, prompt = 0, ""
        for index, content in enumerate(contents):
            if content.role == "user" and _text(content):
                start, prompt = index + 1, _text(content)
        # ADK strips call ids before a request reaches the model, so a response is paired with
        # the first unanswered call of the same name, and kept in that call's position.
        outputs: list[list[str | None]] = []
        pending: list[tuple[str, list[str | None], int]] = []
        for content in contents[start:]:
            calls = [p.function_call for p in content.parts or [] if p.function_call is not None]
            if content.role == "model" and calls:
                step: list[str | None] = [None] * len(calls)
                outputs.append(step)
                pending += [(call.name or "", step, index) for index, call in enumerate(calls)]
            for part in content.parts or []:
                if part.function_response is None:
                    continue
                name = part.function_response.name or ""
                for index, (call_name, step, position) in enumerate(pending):
                    if call_name == name:
                        response = part.function_response.response or {}
                        step[position] = str(response.get("result", response))
                        del pending[index]
                        break
        return decide(prompt, [[o for o in step if o is not None] for step in outputs], self.style)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        decision = self._decide(list(llm_request.contents))
        if isinstance(decision, str):
            parts = [types.Part(text=decision)]
            out_text = decision
        else:
            parts = [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in decision]
            out_text = " ".join(f"{name} {args}" for name, args in decision)
        in_tokens = sum(_count(_text(c)) for c in llm_request.contents)
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=in_tokens,
                candidates_token_count=_count(out_text),
                total_token_count=in_tokens + _count(out_text),
            ),
        )


def make_adk_app(style: str = "careful") -> agent_engines.AdkApp:
    """An ``AdkApp`` over the sample tools whose model follows the rules in ``style``."""
    init_vertex()
    root = LlmAgent(
        name=f"home_automation_{style}",
        model=PolicyLlm(model=f"home-automation-{style}", style=style),
        instruction=INSTRUCTION,
        tools=safe_tools(),
    )
    return agent_engines.AdkApp(agent=root)


def _model_builder(style: str) -> Callable[..., Any]:
    def build(**_: Any) -> Any:
        # The scripted LangChain chat model lives with the LangGraph sample; imported here so
        # the ADK sample does not need LangChain.
        from .langgraph_agent import make_model

        return make_model(style)

    return build


def make_langgraph_agent(style: str = "careful") -> agent_engines.LanggraphAgent:
    """A ``LanggraphAgent`` (a prebuilt ReAct graph) over the sample tools, scripted model."""
    init_vertex()
    return agent_engines.LanggraphAgent(
        model=f"home-automation-{style}", tools=safe_tools(), model_builder=_model_builder(style)
    )


def make_langchain_agent(style: str = "careful", *, intermediate_steps: bool = True) -> agent_engines.LangchainAgent:
    """A ``LangchainAgent`` (an ``AgentExecutor``) over the sample tools, scripted model.

    ``intermediate_steps=True`` makes it return the steps it took, which is where Vertex's own
    evaluation (and levelfield) read its trajectory from.
    """
    init_vertex()
    return agent_engines.LangchainAgent(
        model=f"home-automation-{style}",
        tools=safe_tools(),
        model_builder=_model_builder(style),
        agent_executor_kwargs={"return_intermediate_steps": intermediate_steps},
    )


agent = make_adk_app()
