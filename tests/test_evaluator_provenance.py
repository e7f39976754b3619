"""Evaluator provenance: which judge, prompt, rubrics and metric version gave each score, kept in the run
record, exported with the scores, and checked before two runs are compared (compare against a baseline
and its gate, view's diff, watch's drift)."""

import hashlib
import json
import warnings

import pytest

import levelfield as lf
from levelfield import EvaluatorsDifferError, EvaluatorsDifferWarning
from levelfield._core.results.provenance import Evaluator, evaluator_of, evaluators_of
from levelfield._core.results.record import RUNS_FILE
from levelfield._core.score.metrics.base import Metric, Score
from levelfield.metrics import PointwiseMetric
from levelfield.testing import ScriptedJudge

CASES = [{"case_id": f"c{i}", "prompt": f"Is the door {i} locked?", "reference": "yes"} for i in range(8)]
PROMPT_V1 = "Is this answer safe? Question: {prompt} Answer: {response}. Reply 1 (safe) or 0 (unsafe)."
PROMPT_V2 = "Rate the safety of the answer {response} to {prompt}: 1 safe, 0 unsafe."


def agent(prompt):
    return {"response": "yes", "predicted_trajectory": []}


def safety(prompt=PROMPT_V1, judge=None, **options):
    return PointwiseMetric("safety_v1", prompt, judge or ScriptedJudge(verdict=True), **options)


class WordCount(Metric):
    """A plain metric with a version: the number of words of the answer."""

    requires = ("response",)
    version = "1"

    def __init__(self, *, name: str = "word_count") -> None:
        self.name = name

    def score(self, ctx):
        return Score(float(len(ctx.response.split())))


class WordCountV2(WordCount):
    version = "2"


WordCountV2.__qualname__ = WordCountV2.__name__ = "WordCount"  # the same metric, one version later


def saved(tmp_path, name, metrics):
    lf.evaluate(CASES, agent, metrics, out=tmp_path / name, progress=False)
    return tmp_path / name


def strip_provenance(folder):
    """The record as levelfield wrote it before it kept evaluators: no ``evaluators`` in the header."""
    path = folder / RUNS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.pop("evaluators")
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n", encoding="utf-8")


# -- written and read back ---------------------------------------------------------------------


def test_the_record_keeps_each_metrics_evaluator_and_reads_it_back(tmp_path):
    metric = safety()
    result = lf.evaluate(CASES, agent, [metric, "exact_match"], out=tmp_path / "run", progress=False)
    header = json.loads((tmp_path / "run" / RUNS_FILE).read_text(encoding="utf-8").splitlines()[0])
    kept = header["evaluators"]
    assert set(kept) == {"safety_v1", "exact_match"}
    # The prompt hash is the sha256 of the template the judge is sent (with the answer format it is asked for).
    template = metric.metric_prompt_template.template + "\n\n" + metric._answer_format
    assert kept["safety_v1"]["prompt_sha256"] == hashlib.sha256(template.encode()).hexdigest()
    assert kept["safety_v1"]["judge_model"] == "levelfield.testing.judge.scripted-judge"
    assert kept["safety_v1"]["kind"] == "levelfield.judge.metrics.PointwiseMetric"
    assert kept["exact_match"]["kind"].endswith("ExactMatch") and "judge_model" not in kept["exact_match"]
    back = lf.EvalResult.load(tmp_path / "run")
    assert isinstance(back.evaluators["safety_v1"], Evaluator)
    assert back.evaluators == result.evaluators
    assert back.evaluators["safety_v1"].fingerprint == kept["safety_v1"]["fingerprint"]
    assert back.evaluators["safety_v1"].calibration is None
    # Saved again, the record keeps what it read (the metric objects read back cannot say it themselves).
    back.save(tmp_path / "again")
    again = lf.EvalResult.load(tmp_path / "again")
    assert again.evaluators == result.evaluators


def test_a_record_without_provenance_loads_with_it_unknown(tmp_path):
    folder = saved(tmp_path, "old", [safety(), "exact_match"])
    strip_provenance(folder)
    back = lf.EvalResult.load(folder)
    assert back.evaluators == {}
    assert back.summary_metrics["safety_v1/mean"] == 1.0  # the scores load as before
    cmp = lf.Comparison.load(folder)
    assert cmp.evaluators == {}


def test_the_fingerprint_follows_what_decides_the_scores_not_how_the_judge_runs():
    judge = ScriptedJudge(verdict=True)
    base = evaluator_of(safety(judge=judge))
    assert evaluator_of(safety(judge=judge, judge_config=lf.JudgeConfig(retries=7, concurrency=2, timeout=5))).fingerprint == base.fingerprint
    assert evaluator_of(safety(PROMPT_V2, judge=judge)).fingerprint != base.fingerprint
    assert evaluator_of(safety(judge=judge, judge_config=lf.JudgeConfig(samples=3))).fingerprint != base.fingerprint
    assert evaluator_of(safety(judge=ScriptedJudge(verdict=True, name="other-judge"))).fingerprint != base.fingerprint
    # A calibration record rides along without changing what the judge measures.
    assert base.with_calibration({"sensitivity": 0.9}).fingerprint == base.fingerprint


def test_an_adk_criterions_prompt_written_in_code_is_hashed_by_its_template_texts(monkeypatch):
    from levelfield.judge import adk
    from levelfield.judge.adk import final_response

    judge = ScriptedJudge(verdict=True)
    before = evaluator_of(adk.FinalResponseMatchV2(judge=judge)).prompt_sha256
    assert before is not None
    monkeypatch.setattr(final_response, "_FINAL_RESPONSE_MATCH_PROMPT",
                        final_response._FINAL_RESPONSE_MATCH_PROMPT.replace("correct", "right"))
    assert evaluator_of(adk.FinalResponseMatchV2(judge=judge)).prompt_sha256 != before


# -- compare against a baseline, and the gate --------------------------------------------------


def test_compare_against_a_baseline_judged_with_another_prompt_is_refused_naming_it(tmp_path):
    base = saved(tmp_path, "main", [safety(PROMPT_V1)])
    old = lf.EvalResult.load(base).evaluators["safety_v1"].prompt_sha256
    new = evaluator_of(safety(PROMPT_V2)).prompt_sha256
    with pytest.raises(EvaluatorsDifferError) as caught:
        lf.compare(CASES, {"new": agent}, [safety(PROMPT_V2)], baseline=base, progress=False)
    message = str(caught.value)
    assert f"metric 'safety_v1': judge prompt differs (sha256 {old[:8]}… vs {new[:8]}…)" in message
    assert "allow_different_evaluators=True" in message
    # The gate never ran on it either.
    with pytest.raises(EvaluatorsDifferError):
        lf.compare(CASES, {"new": agent}, [safety(PROMPT_V2)], baseline=base, fail_if_worse="safety_v1", progress=False)


def test_allowed_it_warns_and_labels_the_comparison_and_the_report(tmp_path):
    base = saved(tmp_path, "main", [safety(PROMPT_V1)])
    with pytest.warns(EvaluatorsDifferWarning, match="judge prompt differs"):
        cmp = lf.compare(CASES, {"new": agent}, [safety(PROMPT_V2)], baseline=base, progress=False,
                         allow_different_evaluators=True, fail_if_worse="safety_v1", out=tmp_path / "cmp")
    assert len(cmp.evaluator_notes) == 1 and "metric 'safety_v1': judge prompt differs" in cmp.evaluator_notes[0]
    assert "Evaluators: compared across different evaluators: metric 'safety_v1': judge prompt differs" in str(cmp)
    # The baseline agent keeps the evaluators its scores came from.
    assert cmp.results["main"].evaluators["safety_v1"].prompt_sha256 != cmp.evaluators["safety_v1"].prompt_sha256
    assert "Scores from different evaluators" in (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    loaded = lf.Comparison.load(tmp_path / "cmp")
    assert loaded.evaluator_notes == cmp.evaluator_notes  # the label is kept in the record


def test_a_baseline_judged_by_another_model_is_refused_naming_both(tmp_path):
    base = saved(tmp_path, "main", [safety(judge=ScriptedJudge(verdict=True, name="judge-a"))])
    with pytest.raises(EvaluatorsDifferError, match=r"metric 'safety_v1': judge model differs "
                                                    r"\(levelfield\.testing\.judge\.judge-a vs levelfield\.testing\.judge\.judge-b\)"):
        lf.compare(CASES, {"new": agent}, [safety(judge=ScriptedJudge(verdict=True, name="judge-b"))], baseline=base,
                   progress=False)


def test_a_baseline_scored_by_another_metric_version_is_refused(tmp_path):
    base = saved(tmp_path, "main", [safety()])
    newer = safety()
    newer.version = "2"
    with pytest.raises(EvaluatorsDifferError, match=r"metric 'safety_v1': metric version differs \(none vs 2\)"):
        lf.compare(CASES, {"new": agent}, [newer], baseline=base, progress=False)


def test_the_same_evaluators_compare_without_a_word(tmp_path):
    base = saved(tmp_path, "main", [safety(), "exact_match"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvaluatorsDifferWarning)
        cmp = lf.compare(CASES, {"new": agent}, [safety(), "exact_match"], baseline=base, progress=False)
    assert cmp.evaluator_notes == [] and "Evaluators:" not in str(cmp)


def test_a_baseline_recorded_before_provenance_is_compared_and_said_unchecked(tmp_path):
    base = saved(tmp_path, "old", [safety()])
    strip_provenance(base)
    cmp = lf.compare(CASES, {"new": agent}, [safety(PROMPT_V2)], baseline=base, progress=False)
    assert cmp.evaluator_notes == ["evaluators not recorded on both sides for 'safety_v1' (a record written before "
                                   "levelfield kept them): not checked"]


def test_the_command_line_refuses_and_allows_with_its_flag(tmp_path, capsys, monkeypatch):
    from levelfield.cli.main import main

    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in CASES), encoding="utf-8")
    (tmp_path / "prov_judges.py").write_text(
        "from levelfield.testing import ScriptedJudge\n"
        "A = ScriptedJudge(verdict=True, name='judge-a')\nB = ScriptedJudge(verdict=True, name='judge-b')\n"
        "def agent(prompt):\n    return {'response': 'yes', 'predicted_trajectory': []}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = ["compare", str(data), "--agent", "new=prov_judges:agent", "--quiet", "--metric", "safety_v1"]
    assert main(run + ["--judge", "prov_judges:A", "--out", str(tmp_path / "main")]) == 0
    capsys.readouterr()
    against = ["--judge", "prov_judges:B", "--baseline", str(tmp_path / "main")]
    code = main(run + against)
    err = capsys.readouterr().err
    assert code == 2 and "metric 'safety_v1': judge model differs" in err and "--allow-different-evaluators" in err
    code = main(run + against + ["--allow-different-evaluators"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "Evaluators: compared across different evaluators: metric 'safety_v1': judge model differs" in out
    assert "judge model differs" in err  # the warning, as the command line prints warnings
    assert main(run + ["--judge", "prov_judges:B", "--allow-different-evaluators"]) == 2
    assert "applies to a comparison with --baseline" in capsys.readouterr().err


# -- view's diff -------------------------------------------------------------------------------


def _sides(tmp_path, a, b):
    from levelfield.view.diff import Side
    from levelfield.view.index import RecordIndex

    out = []
    for name in (a, b):
        index = RecordIndex(tmp_path / name / RUNS_FILE)
        index.refresh()
        out.append(Side(name, index, index.agents[0]))
    return out


def test_view_refuses_a_diff_across_metric_versions_and_labels_one_allowed(tmp_path):
    from levelfield.view.diff import diff_runs

    saved(tmp_path, "v1", [WordCount()])
    saved(tmp_path, "v2", [WordCountV2()])
    a, b = _sides(tmp_path, "v1", "v2")
    with pytest.raises(EvaluatorsDifferError, match=r"metric 'word_count': metric version differs \(1 vs 2\)"):
        diff_runs(a, b)
    with pytest.warns(EvaluatorsDifferWarning):
        diff = diff_runs(a, b, allow_different_evaluators=True)
    assert diff.evaluator_notes == ["compared across different evaluators: metric 'word_count': metric version differs (1 vs 2)"]
    assert [c.metric for c in diff.changes] == ["word_count"]


def test_the_view_app_shows_the_refusal_and_the_labelled_diff(tmp_path):
    pytest.importorskip("starlette", reason="levelfield view needs the view extra")
    from starlette.testclient import TestClient

    from levelfield.view import create_app

    runs = tmp_path / "runs"
    saved(runs, "a", [safety(PROMPT_V1)])
    saved(runs, "b", [safety(PROMPT_V2)])
    saved(runs, "c", [safety(PROMPT_V1)])
    client = TestClient(create_app([runs], allowed_hosts=["testserver"]))
    refused = client.get("/diff", params={"a": "runs/a", "b": "runs/b"})
    assert refused.status_code == 409
    assert "metric &#x27;safety_v1&#x27;: judge prompt differs" in refused.text and 'id="anyway"' in refused.text
    allowed = client.get("/diff", params={"a": "runs/a", "b": "runs/b", "allow_different_evaluators": "1"})
    assert allowed.status_code == 200 and 'id="evaluators"' in allowed.text and "judge prompt differs" in allowed.text
    same = client.get("/diff", params={"a": "runs/a", "b": "runs/c"})
    assert same.status_code == 200 and 'id="evaluators"' not in same.text
    listing = client.get("/", params={"baseline": "runs/a"}).text
    assert "judge prompt differs" in listing  # the run list says why b has no standing against a


# -- watch's drift -----------------------------------------------------------------------------


def test_drift_against_a_baseline_judged_otherwise_is_refused_or_labelled(tmp_path):
    from levelfield.watch.drift import Drift

    base = saved(tmp_path, "base", [safety(PROMPT_V1)])
    window = saved(tmp_path, "window", [safety(PROMPT_V2)]) / RUNS_FILE
    now = evaluators_of([safety(PROMPT_V2)])
    (tmp_path / "out").mkdir()
    with pytest.raises(lf.ConfigError, match=r"metric 'safety_v1': judge prompt differs .*allow_different_evaluators"):
        Drift(base, ["safety_v1"], tmp_path / "out", metrics=["safety_v1"], evaluators=now, min_window=1)
    with pytest.warns(EvaluatorsDifferWarning):
        drift = Drift(base, ["safety_v1"], tmp_path / "out", metrics=["safety_v1"], evaluators=now, min_window=1,
                      allow_different_evaluators=True)
    drift.check(window)
    (entry,) = [json.loads(line) for line in (tmp_path / "out" / "drift.jsonl").read_text().splitlines()]
    assert entry["evaluator_notes"] == drift.evaluator_notes
    assert "judge prompt differs" in entry["evaluator_notes"][0]
    same = Drift(base, ["safety_v1"], tmp_path / "out2", metrics=["safety_v1"],
                 evaluators=evaluators_of([safety(PROMPT_V1)]), min_window=1)
    assert same.evaluator_notes == []


def test_the_watcher_refuses_a_baseline_of_another_metric_version(tmp_path):
    from levelfield.watch import Watcher

    base = saved(tmp_path, "base", [WordCount()])
    with pytest.raises(lf.ConfigError, match="allow_different_evaluators applies to drift against a baseline"):
        Watcher([WordCountV2()], tmp_path / "w0", otlp_port=None, folder=tmp_path, allow_different_evaluators=True)
    watcher = Watcher([WordCountV2()], tmp_path / "w", otlp_port=None, folder=tmp_path / "traces", baseline=base,
                      alert_if_worse=["word_count"])
    watcher.scorer = type("S", (), {"exporter": None})()
    with pytest.raises(lf.ConfigError, match=r"metric 'word_count': metric version differs \(1 vs 2\)"):
        watcher._set_up_drift_and_sources()


# -- exported scores ----------------------------------------------------------------------------


def test_otlp_score_events_carry_the_evaluator():
    pytest.importorskip("opentelemetry.sdk", reason="needs the traces extra")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    result = lf.evaluate(CASES[:2], agent, [safety(), WordCount()], progress=False)
    sink = InMemorySpanExporter()
    assert lf.export_scores(result, sink) == 4
    events = [e.attributes for s in sink.get_finished_spans() for e in s.events]
    judged = next(e for e in events if e["gen_ai.evaluation.name"] == "safety_v1")
    who = result.evaluators["safety_v1"]
    assert judged["levelfield.evaluator.safety_v1.judge_model"] == "levelfield.testing.judge.scripted-judge"
    assert judged["levelfield.evaluator.safety_v1.prompt_sha256"] == who.prompt_sha256
    assert judged["levelfield.evaluator.safety_v1.fingerprint"] == who.fingerprint
    plain = next(e for e in events if e["gen_ai.evaluation.name"] == "word_count")
    assert plain["levelfield.evaluator.word_count.version"] == "1"
    assert "levelfield.evaluator.word_count.judge_model" not in plain


def test_mlflow_runs_carry_the_evaluator_as_params(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="needs the mlflow extra")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)
    result = lf.evaluate(CASES[:2], agent, [safety(), WordCount()], progress=False, experiment="lf-provenance")
    client = mlflow.MlflowClient()
    (run,) = client.search_runs([client.get_experiment_by_name("lf-provenance").experiment_id])
    params = run.data.params
    who = result.evaluators["safety_v1"]
    assert params["levelfield.evaluator.safety_v1.judge_model"] == "levelfield.testing.judge.scripted-judge"
    assert params["levelfield.evaluator.safety_v1.prompt_sha256"] == who.prompt_sha256
    assert params["levelfield.evaluator.word_count.version"] == "1"


def test_watchs_mlflow_assessments_carry_the_evaluator(tmp_path):
    pytest.importorskip("mlflow", reason="needs the mlflow extra")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the watch extra")
    import mlflow

    from levelfield._core.score.metrics.registry import resolve_metrics
    from levelfield.watch import Watcher
    from tests.conftest import mlflow_store
    from tests.watch.test_watch import PROMPTS, references, wait_for
    from tests.watch.test_watch_mlflow import METRICS, assessments, home_agent

    with mlflow_store(tmp_path / "mlflow.db") as tracking:
        mlflow.set_experiment("production")
        agent = home_agent()
        agent(PROMPTS[0])
        tid = mlflow.get_last_active_trace_id()
        with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production",
                     mlflow_tracking_uri=tracking, references=references(tmp_path / "refs.jsonl"), poll=0.1) as w:
            wait_for(lambda: w.stats.mlflow_assessments == 2)
        found = assessments(tid)["trajectory_exact_match"]
    expected = evaluator_of(resolve_metrics(["trajectory_exact_match"])[0])
    assert found.metadata["levelfield.evaluator.trajectory_exact_match.fingerprint"] == expected.fingerprint
    assert found.metadata["levelfield.evaluator.trajectory_exact_match.kind"] == expected.kind


def test_a_chat_model_judges_settings_are_named_when_they_differ_and_its_key_is_never_kept():
    openai = pytest.importorskip("langchain_openai", reason="needs langchain-openai")
    from levelfield._core.results.provenance import differences

    def judge(temperature):
        return openai.ChatOpenAI(model="gpt-4o-mini", temperature=temperature, api_key="sk-provenance-test",
                                 base_url="http://127.0.0.1:9/v1")

    cold, warm = evaluator_of(safety(judge=judge(0.0))), evaluator_of(safety(judge=judge(0.7)))
    assert cold.judge_model == "gpt-4o-mini"
    assert differences(cold, warm) == ["judge settings differ (settings.temperature=0.0 vs 0.7)"]
    assert "sk-provenance-test" not in json.dumps(cold.to_dict()) and "sk-provenance-test" not in json.dumps(cold.attributes())


def test_a_judge_corrected_by_human_labels_keeps_that_record_beside_its_evaluator(tmp_path):
    labels = {"c0": 1, "c1": 1, "c2": 0, "c3": 1}
    result = lf.evaluate(CASES, agent, [safety()], human_labels=labels, out=tmp_path / "run", progress=False)
    correction = result.judge_corrections["safety_v1"]
    record = lf.EvalResult.load(tmp_path / "run").evaluators["safety_v1"].calibration
    assert record["kind"] == "judge_correction" and record["human_labels"] == 4
    assert record["sensitivity"] == correction.sensitivity == 1.0  # the judge said yes to all three humans' yes
    assert record["specificity"] == correction.specificity == 0.0  # and yes to the one no
    # Certifying a judge does not change what it measures: the run compares with an uncorrected one.
    assert lf.EvalResult.load(tmp_path / "run").evaluators["safety_v1"].fingerprint == evaluator_of(safety()).fingerprint


def test_how_a_chat_model_judge_is_called_does_not_make_it_another_evaluator():
    openai = pytest.importorskip("langchain_openai", reason="needs langchain-openai")

    def judge(**how):
        return openai.ChatOpenAI(model="gpt-4o-mini", temperature=0, base_url="http://127.0.0.1:9/v1", **how)

    one = evaluator_of(safety(judge=judge(api_key="sk-one", max_retries=2, timeout=10)))
    other = evaluator_of(safety(judge=judge(api_key="sk-two", max_retries=6, timeout=60)))
    assert one.fingerprint == other.fingerprint
    assert evaluator_of(safety(judge=judge(api_key="sk-one", max_tokens=50))).fingerprint != one.fingerprint


def test_a_databricks_judge_of_several_templates_is_described_by_all_of_them():
    judge = ScriptedJudge(verdict=True)
    correctness = evaluator_of(lf.metrics.databricks.correctness(judge=judge))
    assert correctness.judge_model == "levelfield.testing.judge.scripted-judge"
    assert correctness.prompt_sha256 is not None and correctness.rubrics_sha256 is not None
    assert evaluator_of(lf.metrics.databricks.relevance_to_query(judge=judge)).prompt_sha256 != correctness.prompt_sha256
