"""Conversation overhead: scenario cases played with a simulated user, against the same turns scripted.

Each case is a 3-turn conversation with an async agent that sleeps ``--sleep`` per turn; the user
is a ``ScriptedUser`` that sleeps ``--user-sleep`` per turn (a stand-in for a model's latency).
Prints wall time over the ideal (cases x turns x sleep / concurrency) for:

- scripted: the same three user turns given as a fixed multi-turn case (no simulator);
- simulated: one agent with the simulated user;
- compare: two agents, the second replaying the first agent's user turns (it waits for them).

    python bench/bench_conversations.py [--cases 500] [--concurrency 50] [--sleep 0.02] [--user-sleep 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import levelfield as lf
from levelfield._core.run.conversation import UserTurn


class SleepyUser:
    """Says two more things after the starting prompt, taking ``pause`` seconds each time."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.max_turns = 10

    async def next_turn(self, scenario, transcript):
        await asyncio.sleep(self.pause)
        return UserTurn(f"step {len(transcript)}" if len(transcript) < 3 else None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--user-sleep", type=float, default=0.02)
    args = parser.parse_args()
    pause = args.sleep

    async def agent(prompt: str) -> dict:
        await asyncio.sleep(pause)
        return {"response": f"done {prompt}", "predicted_trajectory": [{"tool_name": "t", "tool_input": {"p": prompt}}]}

    scripted = [{"case_id": f"c{i}", "turns": [{"prompt": "start"}, {"prompt": "step 1"}, {"prompt": "step 2"}]}
                for i in range(args.cases)]
    scenarios = [{"case_id": f"c{i}", "scenario": {"starting_prompt": "start", "conversation_plan": "two steps"}}
                 for i in range(args.cases)]
    opts = {"progress": False, "concurrency": args.concurrency}
    agent_ideal = args.cases * 3 * pause / args.concurrency
    user_ideal = args.cases * 2 * args.user_sleep / args.concurrency

    start = time.perf_counter()
    lf.evaluate(scripted, agent, ["trajectory_recall"], **opts)
    t_scripted = time.perf_counter() - start

    start = time.perf_counter()
    result = lf.evaluate(scenarios, agent, ["trajectory_recall", "turns_used"], simulator=SleepyUser(args.user_sleep), **opts)
    t_sim = time.perf_counter() - start
    assert all(len(r.turns) == 3 for r in result.runs)

    start = time.perf_counter()
    cmp = lf.compare(scenarios, {"a": agent, "b": agent}, ["turns_used"], simulator=SleepyUser(args.user_sleep), **opts)
    t_cmp = time.perf_counter() - start
    replayed = sum(r.conversation.replayed_from is not None for res in cmp.results.values() for r in res.runs)

    print(f"{args.cases} cases x 3 turns, agent {pause * 1000:.0f} ms/turn, user {args.user_sleep * 1000:.0f} ms/turn, "
          f"concurrency {args.concurrency}")
    print(f"scripted turns : {t_scripted:.2f} s  ({t_scripted / agent_ideal:.2f}x the ideal {agent_ideal:.2f} s)")
    sim_ideal = agent_ideal + user_ideal
    print(f"simulated user : {t_sim:.2f} s  ({t_sim / sim_ideal:.2f}x the ideal {sim_ideal:.2f} s, agent + user time)")
    cmp_ideal = 2 * agent_ideal + user_ideal
    print(f"compare, 2 agents (replay): {t_cmp:.2f} s  ({t_cmp / cmp_ideal:.2f}x the ideal {cmp_ideal:.2f} s); "
          f"{replayed} of {2 * args.cases} conversations replayed")


if __name__ == "__main__":
    main()
