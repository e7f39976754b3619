"""What the A2A preflight reports: one ``Check`` a row (pass / warn / fail / skip, with the spec
section it comes from), the ``Preflight`` table of them, and the sections and task states cited."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Check", "Preflight", "STATUSES", "DEFAULT_PROMPT", "TOOL_CALLS"]

STATUSES = ("pass", "warn", "fail", "skip")
DEFAULT_PROMPT = "Hello. In one sentence, what can you do?"
"""What the probes send when no prompt is given (an evaluation sends its first case's prompt)."""

TOOL_CALLS = {
    "adk": "ADK-marked data parts (metadata adk_type = function_call / function_response): levelfield reads them",
    "data": "plain data parts that look like tool calls but carry no adk_type mark: levelfield does not read them "
            "(mark them the ADK way, or pass A2AAgent(trajectory_extractor=...))",
    "none": "no tool calls in the probe answers: the agent does not expose its tool calls over A2A, "
            "or did not use a tool for this prompt",
    "unknown": "not known: no probe answer could be read",
}
"""How an agent exposes its tool calls, as the preflight found it."""

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")

# Spec sections (A2A 0.3 numbering; 1.0's AgentCard is §4.4.1).
S_CARD = "A2A 0.3 §5.5 AgentCard; 1.0 §4.4.1 AgentCard"
S_DISCOVERY = "A2A 0.3 §5.3 well-known URI (/.well-known/agent-card.json)"
S_INTERFACES = "A2A 0.3 §5.6 transport declaration; 1.0 §4.4.1 AgentCard.supportedInterfaces"
S_CAPABILITIES = "A2A 0.3 §5.5.2 AgentCapabilities"
S_SEND = "A2A 0.3 §7.1 message/send (1.0 SendMessage)"
S_STREAM = "A2A 0.3 §7.2 message/stream, §3.3.1 JSON-RPC streaming (1.0 SendStreamingMessage)"
S_STREAM_EVENTS = "A2A 0.3 §7.2.1 SendStreamingMessageResponse, §7.2.2 TaskStatusUpdateEvent"
S_STATES = "A2A 0.3 §6.3 TaskState (terminal: completed, failed, canceled, rejected)"
S_PARTS = "A2A 0.3 §6.4 Message, §6.5 Part (exactly one of text, file, data)"
S_GET = "A2A 0.3 §7.3 tasks/get (1.0 GetTask)"
S_CANCEL = "A2A 0.3 §7.4 tasks/cancel, §8.2 TaskNotFoundError -32001"
S_JSONRPC = "A2A 0.3 §6.11 JSON-RPC structures"
S_ERRORS = "A2A 0.3 §8.1 standard JSON-RPC errors (-32700, -32601, -32602)"
S_RETRY = "RFC 6585 §4 (429), RFC 9110 §10.2.3 Retry-After: a client can only wait as long as the server says"
S_TOOLS = "ADK's A2A convention: data parts with metadata adk_type (not part of the A2A spec)"

TERMINAL = ("completed", "failed", "canceled", "rejected")
INTERRUPTED = ("input-required", "auth-required")
RUNNING = ("submitted", "working")
_KNOWN_STATES = TERMINAL + INTERRUPTED + RUNNING


@dataclass(frozen=True)
class Check:
    """One row of the preflight: what was checked, how it went, where the rule comes from."""

    name: str
    """What was checked, e.g. ``card.required_fields``, ``stream.final_state``."""
    status: str
    """``pass``, ``warn`` (allowed but a problem for an evaluation), ``fail`` (breaks the spec) or ``skip``."""
    section: str
    """The spec section (or RFC) the rule comes from."""
    detail: str = ""
    """What was seen, in a sentence."""
    version: str = ""
    """The protocol version the probe spoke (``1.0``, ``0.3``); empty for card checks."""


@dataclass
class Preflight:
    """What the preflight found about one A2A endpoint."""

    url: str
    agent: str | None = None
    """The name on the card, when the card could be read."""
    checks: list[Check] = field(default_factory=list)
    tool_calls: str = "unknown"
    """How the agent exposes tool calls: a key of :data:`TOOL_CALLS`."""
    versions: list[str] = field(default_factory=list)
    """The JSON-RPC protocol versions probed."""

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == "warn"]

    @property
    def ok(self) -> bool:
        """No check failed (warnings allowed)."""
        return not self.failed

    def check(self, name: str, version: str | None = None) -> Check | None:
        """The first check named ``name`` (of that protocol ``version``, when given)."""
        return next((c for c in self.checks if c.name == name and (version is None or c.version == version)), None)

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in STATUSES}

    def summary(self) -> str:
        """One line: the verdict and the counts."""
        n = self.counts()
        head = "conforms" if self.ok else "does NOT conform"
        return (f"A2A preflight of {self.agent or self.url}: {head} ({n['pass']} pass, {n['warn']} warn, "
                f"{n['fail']} fail, {n['skip']} skip); tool calls: {self.tool_calls}")

    def table(self) -> str:
        """The checks as a fixed-width text table, then the summary line."""
        rows = [("check", "ver", "status", "detail", "spec")] + [
            (c.name, c.version or "-", c.status.upper() if c.status in ("fail", "warn") else c.status, c.detail, c.section)
            for c in self.checks
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" + (f"  [{r[4]}]" if i else "  [spec]")
            for i, r in enumerate(rows)
        ]
        return "\n".join([*lines, "", self.summary(), f"  tool calls: {TOOL_CALLS.get(self.tool_calls, self.tool_calls)}"])

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "agent": self.agent, "tool_calls": self.tool_calls, "versions": list(self.versions),
                "ok": self.ok, "checks": [asdict(c) for c in self.checks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preflight:
        fields = Check.__dataclass_fields__
        checks = [Check(**{k: v for k, v in c.items() if k in fields}) for c in data.get("checks") or []]
        return cls(url=str(data.get("url", "")), agent=data.get("agent"), checks=checks,
                   tool_calls=str(data.get("tool_calls", "unknown")), versions=list(data.get("versions") or []))
