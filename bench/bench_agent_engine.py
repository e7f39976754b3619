"""Benchmark of the Agent Engine adapter on the local templates, and a check against Vertex's parser.

Prints, for each local template (AdkApp, LanggraphAgent, LangchainAgent): the mean time of one
sample case called directly on the template and through ``AgentEngineAgent`` (the adapter's
overhead), and the wall time of ``lf.evaluate`` on the 18-case sample dataset. Then runs
Vertex's own ``parse_intermediate_steps`` (in a subprocess: importing it silences warnings) on
a LangchainAgent output and says whether levelfield reads the same trajectory.

Run: ``python bench/bench_agent_engine.py``
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")

import levelfield as lf  # noqa: E402
from levelfield._core.data.protocol import AgentRequest  # noqa: E402
from levelfield.adapters import AgentEngineAgent  # noqa: E402
from samples.home_automation.agents import agent_engine_agent as sample  # noqa: E402

DATASET = Path(__file__).resolve().parents[1] / "samples" / "home_automation" / "dataset.jsonl"
PROMPT = "Turn off all the devices in the Kitchen."
REPEATS = 30


async def direct(template, i: int) -> None:
    if isinstance(template, lf.adapters.AgentEngineAgent):
        await template.arun(AgentRequest(prompt=PROMPT, session_id=f"s{i}"))
    elif hasattr(template, "async_stream_query"):
        async for _ in template.async_stream_query(message=PROMPT, user_id="bench"):
            pass
    else:
        await asyncio.to_thread(template.query, input=PROMPT)


async def mean_seconds(target) -> float:
    await direct(target, -1)  # warm up (lazy imports, set-up)
    start = time.perf_counter()
    for i in range(REPEATS):
        await direct(target, i)
    return (time.perf_counter() - start) / REPEATS


def vertex_agrees() -> bool:
    output = asyncio.run(AgentEngineAgent(sample.make_langchain_agent()).arun(AgentRequest(prompt=PROMPT)))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(output.raw, f)
    code = (
        "import json, sys\n"
        "from vertexai.preview.evaluation import utils\n"
        "print(json.dumps(utils.parse_intermediate_steps(json.load(open(sys.argv[1]))['intermediate_steps'])))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, f.name], capture_output=True, text=True, check=True)
    vertex = json.loads(done.stdout.strip().splitlines()[-1])
    ours = [{"tool_name": c.tool_name, "tool_input": c.tool_input} for c in output.trajectory]
    print(f"Vertex parse_intermediate_steps: {vertex}")
    return ours == vertex


def main() -> None:
    print(f"{'template':<16} {'direct ms/case':>15} {'adapter ms/case':>16} {'evaluate 18 cases s':>20}")
    for make in (sample.make_adk_app, sample.make_langgraph_agent, sample.make_langchain_agent):
        template = make()
        raw = asyncio.run(mean_seconds(template))
        wrapped = asyncio.run(mean_seconds(AgentEngineAgent(make())))
        start = time.perf_counter()
        result = lf.evaluate(str(DATASET), make(), metrics=["trajectory_exact_match"], progress=False)
        wall = time.perf_counter() - start
        assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
        print(f"{type(template).__name__:<16} {raw * 1000:>15.1f} {wrapped * 1000:>16.1f} {wall:>20.2f}")
    print(f"levelfield trajectory == Vertex's parser on LangchainAgent intermediate_steps: {vertex_agrees()}")


if __name__ == "__main__":
    main()
