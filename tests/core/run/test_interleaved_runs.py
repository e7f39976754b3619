"""Runs start case by case across agents, so an interrupted comparison pairs what it has."""

import asyncio

import pytest

import levelfield as lf
from levelfield._core.results.record import read_record

CASES = [{"case_id": f"c{i}", "prompt": f"Frage {i}: 你好", "reference": "ok"} for i in range(6)]


def _agents(calls: list[str], stop_after: int, task_of: dict) -> dict:
    """Two agents that log their calls; the ``stop_after``-th call cancels the whole comparison."""

    def make(name: str):
        async def agent(prompt: str) -> str:
            calls.append(name)
            if len(calls) == stop_after:
                task_of["task"].cancel()  # the user stops the evaluation (as Ctrl-C would)
                await asyncio.sleep(3600)
            return "ok"

        return agent

    return {"alpha": make("alpha"), "beta": make("beta")}


@pytest.mark.parametrize("concurrency", [1, 2])
def test_an_interrupted_compare_holds_both_agents_runs_on_the_same_cases(tmp_path, concurrency):
    calls: list[str] = []
    holder: dict = {}
    out = tmp_path / "partial"

    async def main() -> None:
        holder["task"] = asyncio.ensure_future(
            lf.acompare(CASES, _agents(calls, 7, holder), ["exact_match"], out=out, concurrency=concurrency,
                        progress=False)
        )
        with pytest.raises(asyncio.CancelledError):
            await holder["task"]

    asyncio.run(main())
    record = read_record(out)
    cases_of = {agent: {c for a, c, _ in record.runs if a == agent} for agent in ("alpha", "beta")}
    assert len(record.runs) >= 4
    assert cases_of["alpha"] == cases_of["beta"], cases_of
    assert cases_of["alpha"] == {f"c{i}" for i in range(len(cases_of["alpha"]))}  # the first cases, in order


def test_runs_start_case_by_case_alternating_agents():
    calls: list[str] = []
    cmp = lf.compare(CASES[:3], _agents(calls, -1, {}), ["exact_match"], concurrency=1, progress=False)
    assert calls == ["alpha", "beta"] * 3
    # Results stay per agent in dataset order.
    assert list(cmp.results["alpha"].metrics_table["case_id"]) == ["c0", "c1", "c2"]


def test_an_agent_at_its_own_limit_lets_the_other_go_on():
    calls: list[str] = []
    cmp = lf.compare(CASES[:3], _agents(calls, -1, {}), ["exact_match"], concurrency=2,
                     agent_concurrency={"alpha": 1}, progress=False)
    assert sorted(calls) == ["alpha"] * 3 + ["beta"] * 3
    assert all(cmp.results[a].metrics_table["exact_match/score"].eq(1.0).all() for a in ("alpha", "beta"))
