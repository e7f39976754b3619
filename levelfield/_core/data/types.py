"""The normalized data every adapter emits: tool calls, outputs, messages, usage, conversations.

and what the runner records for each run (``AgentRun``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .jsonsafe import clean_strings, has_lone_surrogates

# Every model here builds its validator when first used (``defer_build``), not at import: scoring saved
# rows imports these types and makes none of them, and building them all took a fifth of that
# route's start-up (issue #46). Validation is the same either way.

__all__ = ["ToolCall", "Usage", "Handoff", "AgentOutput", "AgentRun", "clean_run", "Conversation", "Message", "content_text", "transcript_text"]


def content_text(content: Any) -> str:
    """A message content as plain text: a string as is, a list of content blocks flattened
    (text blocks kept, images and other blocks dropped), None as ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type", "text") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


class ToolCall(BaseModel):
    """One tool call of a trajectory; field names match Vertex AI's evaluation columns."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    tool_name: str
    """Name of the tool that was called."""
    tool_input: dict[str, Any] = Field(default_factory=dict)
    """Arguments of the call. A JSON-object string is parsed."""
    tool_output: Any = None
    """What the tool returned, when the adapter saw it."""
    id: str | None = None
    """The framework's call id, when it has one."""
    agent: str | None = None
    """The (sub-)agent that made the call, when known."""
    error: str | None = None
    """The error the tool raised, when the agent handled it and went on."""
    within: str | None = None
    """The id of the call this one was made inside, when a tool ran an agent of its own (an ADK
    ``AgentTool``): the sub-agent's call (``agent`` names it). ADK's event stream does not hold such
    calls, so ADK-named metrics (``tool_trajectory_avg_score``, ``tool_call_count_v1``) leave them out;
    levelfield's own trajectory and efficiency metrics count them."""

    @model_validator(mode="before")
    @classmethod
    def _accept_aliases(cls, data: Any) -> Any:
        # ADK and OpenAI-style calls spell the fields {name, args} / {name, arguments}.
        if isinstance(data, dict) and "tool_name" not in data and "name" in data:
            data = dict(data)
            data["tool_name"] = data.pop("name")
            for key in ("args", "arguments", "input"):
                if key in data and "tool_input" not in data:
                    data["tool_input"] = data.pop(key)
        return data

    @field_validator("tool_input", mode="before")
    @classmethod
    def _parse_json_input(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            try:
                parsed = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"tool_input is a string that is not a JSON object: {value!r}") from exc
            if not isinstance(parsed, dict):
                raise ValueError(f"tool_input must be a JSON object, got {value!r}")
            return parsed
        return value

    def to_vertex(self) -> dict[str, Any]:
        """The call as Vertex AI writes it: ``{"tool_name", "tool_input"}`` plus what is known."""
        out: dict[str, Any] = {"tool_name": self.tool_name, "tool_input": self.tool_input}
        # Spelled out, not a loop of getattr: a table makes one a call (a fifth of its row's time).
        if self.tool_output is not None:
            out["tool_output"] = self.tool_output
        if self.id is not None:
            out["id"] = self.id
        if self.agent is not None:
            out["agent"] = self.agent
        if self.error is not None:
            out["error"] = self.error
        if self.within is not None:
            out["within"] = self.within
        return out


_PARTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""The optional parts of a Usage's input and output counts (None: the source did not say)."""


def _add_part(a: int | None, b: int | None) -> int | None:
    # An unreported part on one side counts as none of it: the sum is a lower bound, priced as
    # full-rate tokens, never an invented discount.
    return None if a is None and b is None else (a or 0) + (b or 0)


class Usage(BaseModel):
    """Token counts of a run (or of judge calls) as the provider bills them, and the model that
    spent them when the adapter knows its name (what prices them: see ``core.data.prices``).

    ``input_tokens`` is every prompt token, cached or not, for every provider (Anthropic's raw API
    leaves cache reads and writes out of its ``input_tokens``: the adapters add them back);
    ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read from and written to the
    provider's prompt cache. ``output_tokens`` is every generated token, reasoning included (Gemini
    counts thoughts apart: the adapters add them in); ``reasoning_tokens`` is the part of it spent
    thinking. A part is None when the source did not report it (not the same as 0)."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    """Every prompt token, cache reads and cache writes included."""
    output_tokens: int = 0
    """Every generated token, reasoning ("thinking") included."""
    total_tokens: int = 0
    cache_read_tokens: int | None = None
    """The part of ``input_tokens`` read from the provider's prompt cache (billed at a discount)."""
    cache_write_tokens: int | None = None
    """The part of ``input_tokens`` written to the provider's prompt cache (billed at a premium)."""
    reasoning_tokens: int | None = None
    """The part of ``output_tokens`` spent on reasoning ("thinking") before the answer."""
    model: str | None = None
    """The model that spent every one of these tokens, when known."""
    by_model: dict[str, Usage] | None = None
    """When several models spent them: each named model's share (tokens beyond their sum came
    from a model whose name nobody reported)."""

    @model_validator(mode="after")
    def _parts_within_totals(self) -> Usage:
        cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
        if cached > self.input_tokens:
            raise ValueError(f"cache_read_tokens + cache_write_tokens ({cached}) exceed input_tokens "
                             f"({self.input_tokens}); input_tokens counts every prompt token, cached ones included")
        if (self.reasoning_tokens or 0) > self.output_tokens:
            raise ValueError(f"reasoning_tokens ({self.reasoning_tokens}) exceed output_tokens ({self.output_tokens}); "
                             "output_tokens counts every generated token, reasoning included")
        return self

    def __add__(self, other: Usage | None) -> Usage:
        if other is None:
            return self
        parts: dict[str, Any] = {part: _add_part(getattr(self, part), getattr(other, part)) for part in _PARTS}
        total = Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            **parts,
        )
        if self.by_model is None and other.by_model is None and self.model == other.model:
            total.model = self.model
            return total
        shares: dict[str, Usage] = {}
        for part in (self, other):
            for name, share in part.model_shares().items():
                shares[name] = shares[name] + share if name in shares else share
        named = sum(s.total_tokens for s in shares.values())
        if len(shares) == 1 and named == total.total_tokens:
            total.model = next(iter(shares))  # the other side spent nothing: one model after all
        elif shares:
            total.by_model = shares
        return total

    def model_shares(self) -> dict[str, Usage]:
        """Each named model's tokens (``{}`` when no model was named)."""
        if self.by_model is not None:
            return dict(self.by_model)
        if self.model is not None:
            return {self.model: self.model_copy(update={"model": None, "by_model": None})}
        return {}

    def unnamed_tokens(self) -> int:
        """Tokens no model name was reported for (they cannot be priced)."""
        named = sum(s.total_tokens or s.input_tokens + s.output_tokens for s in self.model_shares().values())
        return max((self.total_tokens or self.input_tokens + self.output_tokens) - named, 0)

    @property
    def cache_share(self) -> float | None:
        """The share of the prompt tokens read from cache (None when cache reads were not reported)."""
        if self.cache_read_tokens is None or not self.input_tokens:
            return None
        return self.cache_read_tokens / self.input_tokens


class Handoff(BaseModel):
    """Control passing from one (sub-)agent to another: an ADK transfer, a LangGraph supervisor
    handing off to a worker (or the worker handing back), one agent node running after another."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    from_agent: str | None = None
    """The agent that had control (None when unknown, e.g. the first agent of a stream)."""
    to_agent: str
    """The agent that took over."""


class Message(BaseModel):
    """One prior message of a conversation."""

    model_config = ConfigDict(defer_build=True)

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str

    @model_validator(mode="before")
    @classmethod
    def _accept_common_roles(cls, data: Any) -> Any:
        if isinstance(data, dict):
            role = data.get("role") or data.get("type") or "user"
            role = {"human": "user", "ai": "assistant", "model": "assistant", "agent": "assistant"}.get(role, role)
            return {"role": role, "content": content_text(data.get("content", data.get("text", "")))}
        return data


class AgentOutput(BaseModel):
    """What an adapter returns for one turn: the final response and the trajectory."""

    model_config = ConfigDict(defer_build=True)

    response: str
    """The agent's final text answer."""
    trajectory: list[ToolCall] = Field(default_factory=list)
    """The tool calls the agent made, in order."""
    intermediate_responses: list[str] = Field(default_factory=list)
    """Texts the agent produced before the final one."""
    usage: Usage | None = None
    """Tokens spent by the agent's model calls, when known."""
    retrieved_context: list[dict[str, Any]] | None = None
    """Documents the agent's last retrieval step returned, as ``{content, doc_uri}``, when known."""
    handoffs: list[Handoff] = Field(default_factory=list)
    """Hand-offs between (sub-)agents, in order; empty for a single agent or when unknown."""
    model_calls: int | None = None
    """How many model (LLM) calls the turn made, sub-agents included, when the adapter knows."""
    inner_model_calls: int | None = None
    """Of ``model_calls``, those made inside tools that run an agent of their own (ADK ``AgentTool``s):
    ADK's ``inference_call_count_v1`` counts the turn's own event stream, which does not hold them."""
    state: dict[str, Any] | None = None
    """The session state at the end of the turn (ADK session state, LangGraph's final state, a
    function agent's returned ``state``); None when the framework exposes none."""
    duration_seconds: float | None = None
    """Wall-clock seconds the turn took, as the runner timed it (ADK's invocation duration); None for
    saved predictions, which were not timed."""
    raw: Any = Field(default=None, exclude=True)
    """The framework's own output, for debugging; not serialized."""


ConversationStatus = Literal["finished", "max_turns", "replayed", "agent_failure", "simulator_failure"]


class Conversation(BaseModel):
    """What a simulated user said in one run, how the conversation ended, and what each side spent.

    ``user_turns[i]`` is the message the agent answered in ``AgentRun.turns[i]`` (the first is the
    scenario's starting prompt), so the two lists together are the whole transcript.
    """

    model_config = ConfigDict(defer_build=True)

    user_turns: list[str] = Field(default_factory=list)
    """The user's messages, in order, as the agent received them."""
    status: ConversationStatus = "finished"
    """How it ended: the user said it was done (``finished``), the turn limit (``max_turns``), the
    recorded user ran out of turns (``replayed``), the agent failed, or the simulator failed."""
    simulator_failure: bool = False
    """The simulator failed (raised, said nothing, or ended before its plan was complete): not the
    agent's fault, so the run is left out of the agent's scores and counted apart."""
    error: str | None = None
    """What went wrong with the simulator, when ``simulator_failure``."""
    replayed_from: str | None = None
    """The agent whose conversation's user turns were replayed verbatim to this one (None: a live user)."""
    agent_usage: Usage | None = None
    """Tokens the agent spent over the whole conversation, when the adapter reported them."""
    simulator_usage: Usage | None = None
    """Tokens the simulated user spent (None for a scripted or replayed user)."""


class AgentRun(BaseModel):
    """What the runner records for one case, agent and trial, whatever the agent did."""

    model_config = ConfigDict(defer_build=True)

    case_id: str
    agent_name: str
    trial: int = 0
    output: AgentOutput | None = None
    """The agent's output; None when the run failed."""
    latency_in_seconds: float = float("nan")
    """Wall time of the last attempt."""
    failure: bool = False
    error: str | None = None
    error_type: str | None = None
    attempts: int = 1
    """How many attempts the run took (retries of transient errors included)."""
    partial_output: AgentOutput | None = None
    """What a failed run had produced before it failed, when the adapter could tell."""
    turns: list[AgentOutput] = Field(default_factory=list)
    """Per-turn outputs of a multi-turn case (the last one is also ``output``)."""
    conversation: Conversation | None = None
    """The simulated user's side of a conversation-scenario run; None for scripted cases."""
    waited_seconds: float = 0.0
    """Seconds the run waited on its endpoint's limits (a free slot under the adaptive limit, a
    requests/tokens-per-minute bucket, a ``Retry-After``); not part of ``latency_in_seconds``."""
    rate_limited: int = 0
    """Answers of the endpoint that refused the run for its rate limit (HTTP 429/503) and that the
    adaptive limit absorbed: each was waited out and tried again, not counted in ``attempts``."""
    tool_events: list[dict[str, Any]] | None = None
    """When the run's tools were levelled (``tools=`` / ``faults=``, see ``levelfield.tools``): each tool
    call in the order made, ``{"tool", "index", "source", "fault"}`` where ``source`` is ``replayed`` (answered
    from the cassette or the comparison's shared record), ``recorded``, ``live`` or ``missed`` (not in the
    cassette: the replay policy answered) and ``fault`` the injected fault's kind or None. None: not levelled."""
    traceback: str | None = None
    """The agent's traceback when the run failed by raising (its causes included: a framework's error
    wrapping the agent's), bounded and with credentials redacted; None for a timeout or a success."""
    environment: dict[str, Any] | None = None
    """When the run's tools were answered by an environment (``tools=<environment>``): what its session kept
    of the final state at the run's end (``EnvironmentSession.close()``). None: no environment, or no call reached it."""
    failure_class: str | None = None
    """Whose fault a failed run was, when the adapter can tell (A2A agents): ``protocol`` (the answer
    broke the spec), ``transport`` (refused, TLS, timeout) or ``agent``; None otherwise."""
    failure_rule: str | None = None
    """The rule a ``protocol`` failure broke, with its spec section."""


def _unknown(value: Any) -> None:
    return None


def clean_run(run: AgentRun) -> AgentRun:
    """``run`` with its text made writable: lone surrogates (truncated model output) in answers,
    tool calls, errors and turns replaced by U+FFFD (see ``jsonsafe.clean_text``), so saving,
    journaling and every export can encode it. The run is returned as is when it needs no change;
    otherwise each output's ``raw`` keeps what the agent gave (its own ``raw``, or the output as
    it was when it had none)."""
    try:
        # Fast path (pydantic's serializer, ~4x quicker than walking the run in Python): it
        # encodes every string as UTF-8, so it fails on a lone surrogate. Unknown objects pass.
        run.model_dump_json(fallback=_unknown)
        return run
    except Exception:  # noqa: BLE001 - a surrogate, or something else odd: look closely
        pass
    if not has_lone_surrogates(run):
        return run
    cleaned = AgentRun.model_validate(clean_strings(run.model_dump(mode="python")))
    pairs = [(run.output, cleaned.output), (run.partial_output, cleaned.partial_output), *zip(run.turns, cleaned.turns)]
    for original, copy in pairs:
        if original is not None and copy is not None:
            copy.raw = original.raw if original.raw is not None else original
    return cleaned


def transcript_text(user_turns: Sequence[str], agent_turns: Sequence[AgentOutput]) -> str:
    """A conversation as a judge reads it: ``user:`` and ``agent:`` lines, tool calls in between."""
    lines = []
    for user, agent in zip(user_turns, agent_turns):
        lines.append(f"user: {user}")
        for call in agent.trajectory:
            lines.append(f"agent called tool {call.tool_name} with {call.tool_input}")
        lines.append(f"agent: {agent.response}")
    return "\n".join(lines)
