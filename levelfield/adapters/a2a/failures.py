"""Whose fault a failed A2A run was: the protocol, the transport, or the agent.

- ``protocol``: the answer broke the A2A specification (a card clients cannot use, a task that
  never reaches a final state, an answer that is not valid A2A JSON-RPC, a claimed capability not
  served, a 429/503 that does not say when to retry); the rule broken is named.
- ``transport``: the exchange never got a conformant chance (refused, DNS, TLS, a timeout while
  the answer was still coming, a broken connection, an overloaded server that said when to retry,
  credentials refused, an answer over the size cap).
- ``agent``: a conformant answer that reports the agent's own failure (a failed, rejected or
  canceled task, a request for input, an error the agent raised and the server reported).

The run record keeps the class (``AgentRun.failure_class``) and the rule (``AgentRun.failure_rule``).
"""

from __future__ import annotations

__all__ = ["PROTOCOL", "TRANSPORT", "AGENT", "CLASSES", "classify"]

PROTOCOL = "protocol"
TRANSPORT = "transport"
AGENT = "agent"
CLASSES = (PROTOCOL, TRANSPORT, AGENT)

_TRANSPORT_TYPES = frozenset({
    "connection_refused", "connection_error", "dns_error", "tls_error", "connect_timeout", "timeout",
    "connection_lost", "http_502", "http_504", "rate_limited", "unauthorized", "response_too_large",
})
_AGENT_TYPES = frozenset({
    "task_failed", "task_rejected", "task_canceled", "input_required", "auth_required", "internal_error",
    "content_type_not_supported_error", "empty_response",
})
_PROTOCOL_RULES = {
    "bad_card": "the agent card cannot be used (A2A 0.3 §5.5 AgentCard; 1.0 §4.4.1: required fields and interfaces)",
    "bad_response": "the answer is not a valid A2A response (A2A 0.3 §7.1 message/send: a Task or a Message)",
    "a2a_client_error": "the answer is not a valid A2A JSON-RPC response (A2A 0.3 §6.11 JSON-RPC structures)",
    "incomplete": "the answer ended without a final task state (A2A 0.3 §6.3 TaskState, §7.2 message/stream)",
    "method_not_found_error": "the server does not serve a method the spec requires (A2A 0.3 §7 Protocol RPC methods)",
    "parse_error": "the server could not parse a valid JSON-RPC request (A2A 0.3 §8.1)",
    "invalid_request_error": "the server refused a valid JSON-RPC request as invalid (A2A 0.3 §8.1)",
    "invalid_params_error": "the server refused valid message/send params as invalid (A2A 0.3 §7.1.1 MessageSendParams)",
    "invalid_agent_response_error": "the server produced an invalid A2A response (A2A 0.3 §8.2)",
    "stream_ended_running": "the answer ended while the task was still working and it never reached a final state "
                            "(A2A 0.3 §7.1/§7.2: a blocking send or a stream ends at a final or interrupted state)",
    "no_retry_after": "an HTTP 429/503 without Retry-After: a client cannot know when to try again "
                      "(RFC 6585 §4, RFC 9110 §10.2.3)",
    "streaming_not_served": "the card claims streaming (capabilities.streaming) but the stream is not served "
                            "(A2A 0.3 §7.2 message/stream)",
    "http_error_jsonrpc": "an HTTP error status instead of a JSON-RPC response (A2A 0.3 §7: the body MUST be a "
                          "JSONRPCResponse)",
    "empty_part": "a part with no content (A2A 0.3 §6.5 Part: exactly one of text, file, data)",
}


def classify(error_type: str | None, *, retry_after: bool = True, streaming_claimed: bool = False,
             jsonrpc: bool = True) -> tuple[str, str | None]:
    """(class, rule) of a failed A2A run from its error type and what was known of the exchange.

    ``retry_after``: a 429/503 said when to retry. ``streaming_claimed``: the run streamed because
    the card claims streaming. ``jsonrpc``: the exchange used the JSON-RPC binding.
    """
    kind = error_type or ""
    if kind in ("http_429", "http_503"):
        return (TRANSPORT, None) if retry_after else (PROTOCOL, _PROTOCOL_RULES["no_retry_after"])
    if kind in ("method_not_found_error", "unsupported_operation_error") and streaming_claimed:
        return PROTOCOL, _PROTOCOL_RULES["streaming_not_served"]
    if kind == "http_error":
        return (PROTOCOL, _PROTOCOL_RULES["http_error_jsonrpc"]) if jsonrpc else (AGENT, None)
    if kind in _PROTOCOL_RULES:
        return PROTOCOL, _PROTOCOL_RULES[kind]
    if kind in _TRANSPORT_TYPES:
        return TRANSPORT, None
    return AGENT, None
