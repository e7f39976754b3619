"""A2A: evaluate a remote agent that speaks the A2A protocol (a2a-sdk 1.x), and serve one.

One module a job: ``agent`` (``A2AAgent``: one turn sent, its answer read, its failure said),
``events`` (a2a tasks, messages and events read into the normalized output), ``secrets`` (the
credentials redacted wherever a server could echo them), ``http`` (the HTTP side: headers,
credentials in a URL, connection errors, the response size cap), ``failures`` (whose fault a
failed run was), ``preflight`` (the conformance check: ``checks`` what it reports, ``card`` the
agent card checked, ``probes`` what it sends, ``answers`` how it reads what came back), ``server``
(``levelfield serve``: ``task_executor`` runs the agent per message, ``guard`` stands in front).

Names load on first use, and a2a-sdk only when an agent is built or served, so the command line
(which registers ``serve`` and ``a2a-check`` from here) starts light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_members

if TYPE_CHECKING:
    from .agent import A2AAgent
    from .events import (
        ADK_TYPE_KEY,
        AUTHOR_KEYS,
        FUNCTION_CALL,
        FUNCTION_RESPONSE,
        LEVELFIELD_KEY,
        TrajectoryExtractor,
        adk_trajectory,
        restore_ints,
    )
    from .http import ResponseTooLarge
    from .secrets import hide_url_credentials, is_credential_name

__all__ = [
    "A2AAgent",
    "TrajectoryExtractor",
    "adk_trajectory",
    "restore_ints",
    "ADK_TYPE_KEY",
    "FUNCTION_CALL",
    "FUNCTION_RESPONSE",
    "LEVELFIELD_KEY",
    "AUTHOR_KEYS",
    "ResponseTooLarge",
    "is_credential_name",
    "hide_url_credentials",
]

_LAZY = {
    "A2AAgent": ".agent",
    **{name: ".events" for name in ("TrajectoryExtractor", "adk_trajectory", "restore_ints", "ADK_TYPE_KEY",
                                    "FUNCTION_CALL", "FUNCTION_RESPONSE", "LEVELFIELD_KEY", "AUTHOR_KEYS")},
    "ResponseTooLarge": ".http",
    "is_credential_name": ".secrets",
    "hide_url_credentials": ".secrets",
}

__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
