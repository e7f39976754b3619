"""Serve a home-automation sample agent over A2A, then evaluate it from the wire.

Run the server (the careful function agent by default; ``--agent`` picks another sample)::

    python -m samples.home_automation.agents.a2a_server --port 9999

and evaluate it like a local agent::

    import levelfield as lf
    from samples.home_automation import DATASET
    result = lf.evaluate(DATASET, "http://127.0.0.1:9999", metrics=["trajectory_exact_match"])

The same is ``levelfield serve samples.home_automation.agents.function_agents:careful_agent``.
``--demo`` starts the server in the background, evaluates it over A2A and prints the summary.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["main", "SAMPLE_AGENTS"]

SAMPLE_AGENTS = {
    "careful": "samples.home_automation.agents.function_agents:careful_agent",
    "hasty": "samples.home_automation.agents.function_agents:hasty_agent",
    "langgraph": "samples.home_automation.agents.langgraph_agent:agent",
}
"""Short names of the sample agents this script serves, and their specs."""


def _demo(spec: str) -> int:
    import levelfield as lf
    from levelfield.adapters import A2AAgent
    from levelfield.adapters.a2a.server import start_server
    from levelfield.adapters.spec import load_agent_spec

    from .. import DATASET

    metrics = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum"]
    with start_server(load_agent_spec(spec)) as server:
        print(f"serving {spec} at {server.url}")
        result = lf.evaluate(DATASET, A2AAgent(server.url, name="remote"), metrics=metrics, progress=False)
    for key in [f"{m}/mean" for m in metrics] + ["failure/count", "latency_in_seconds/mean"]:
        print(f"{key:32} {result.summary_metrics.get(key)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a sample agent over A2A (or, with ``--demo``, serve it and evaluate it)."""
    parser = argparse.ArgumentParser(description="Serve a home-automation sample agent over A2A.")
    parser.add_argument("--agent", default="careful", help=f"one of {sorted(SAMPLE_AGENTS)} or a module:attr spec")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--demo", action="store_true", help="serve on a free port, evaluate over A2A, print, stop")
    args = parser.parse_args(argv)
    spec = SAMPLE_AGENTS.get(args.agent, args.agent)
    if args.demo:
        return _demo(spec)
    from levelfield.adapters.a2a.server import serve
    from levelfield.adapters.spec import load_agent_spec

    serve(load_agent_spec(spec), host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
