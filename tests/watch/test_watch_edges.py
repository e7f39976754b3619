"""``levelfield watch`` at its edges: compressed bodies inflated no further than the limit, startup
failures and bad options as one line and exit 2, tokens held to the view's rule, a wide host warned of."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import httpx
import pytest

import levelfield as lf

pytest.importorskip("opentelemetry.proto")
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from levelfield.watch import Watcher  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
METRICS = ["trajectory_exact_match"]
LIMIT = 1 << 20

pytestmark = pytest.mark.slow  # the watch command in subprocesses, seconds each


def one_trace() -> bytes:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    with provider.get_tracer("t").start_as_current_span("invoke_agent home") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
    return encode_spans(exp.get_finished_spans()).SerializeToString()


def post(url: str, body: bytes, encoding: str) -> httpx.Response:
    return httpx.post(url, content=body, timeout=60,
                      headers={"Content-Type": "application/x-protobuf", "Content-Encoding": encoding})


# -- compressed bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["deflate", "gzip"])
def test_a_compressed_bomb_is_413_without_inflating_it(tmp_path, encoding):
    inflated = 256 << 20  # 256 MB of zeros: a quarter megabyte compressed
    compress = zlib.compress if encoding == "deflate" else gzip.compress
    bomb = compress(b"\0" * inflated)
    assert len(bomb) < LIMIT
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, max_body=LIMIT) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        tracemalloc.start()
        try:
            response = post(url, bomb, encoding)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert response.status_code == 413 and str(LIMIT) in response.text
        assert peak < 32 << 20, f"{peak >> 20} MB held to refuse a {len(bomb) >> 10} KB request"
        assert post(url, compress(one_trace()), encoding).status_code == 200  # still receiving, and both are read


def test_a_body_over_the_limit_as_sent_is_413(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, max_body=LIMIT) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, os.urandom(LIMIT + 1), "identity").status_code == 413
        assert w.stats.bad_requests == 1


def test_a_cut_deflate_body_is_400(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0) as w:
        response = post(f"http://127.0.0.1:{w.port}/v1/traces", zlib.compress(one_trace())[:-8], "deflate")
        assert response.status_code == 400


# -- the command: startup failures and options, one line and exit 2 -------------------------------------


def watch_command(tmp_path: Path, *extra: str, out: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LEVELFIELD_WATCH_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "levelfield", "watch", "--out", str(out or tmp_path / "out"),
                           "-m", "trajectory_exact_match", *extra],
                          capture_output=True, text=True, env=env, timeout=120)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = one_line_error(watch_command(tmp_path, "--otlp-port", str(port)))
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--otlp-port" in err
    assert len(err.strip().splitlines()) == 1


def test_a_host_that_does_not_resolve_is_one_line_and_exit_2(tmp_path):
    err = one_line_error(watch_command(tmp_path, "--otlp-port", "0", "--host", "no-such-host.invalid"))
    assert "cannot listen on no-such-host.invalid" in err and len(err.strip().splitlines()) == 1


def test_an_out_folder_that_cannot_be_written_is_one_line_and_exit_2(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    err = one_line_error(watch_command(tmp_path, "--otlp-port", "0", out=blocker / "out"))
    assert "cannot write the watch folder" in err and str(blocker) in err


@pytest.mark.parametrize("option, value, says", [
    ("--auth-token", "", "--auth-token: give at least 8 characters"),
    ("--auth-token", "x", "--auth-token: give at least 8 characters"),
    ("--alpha", "2", "argument --alpha"),
    ("--alpha", "nan", "argument --alpha"),
    ("--margin", "-1", "argument --margin"),
    ("--export-otlp", "notaurl", "argument --export-otlp"),
    ("--prices", "no-such-prices.json", "argument --prices"),
    ("--otlp-port", "70000", "argument --otlp-port"),
    ("--min-window", "0", "argument --min-window"),
    ("--max-queue", "0", "argument --max-queue"),
    ("--window", "nan", "argument --window"),
])
def test_an_option_out_of_range_is_refused_naming_it(tmp_path, option, value, says):
    err = one_line_error(watch_command(tmp_path, "--otlp-port", "0", f"{option}={value}"))
    assert says in err, err
    assert not (tmp_path / "out").exists()  # refused before anything started


def test_an_unreadable_prices_file_is_refused(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text("{not json")
    err = one_line_error(watch_command(tmp_path, "--otlp-port", "0", "--prices", str(prices)))
    assert "argument --prices" in err and "cannot read the price table" in err


def test_the_python_api_holds_tokens_and_options_to_the_same_rules(tmp_path):
    for bad in ("", "s3cret"):
        with pytest.raises(lf.ConfigError, match="auth_token: give at least 8 characters"):
            Watcher(METRICS, tmp_path / "out", otlp_port=0, auth_token=bad)
    with pytest.raises(lf.ConfigError, match="alpha=2"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, alpha=2)
    with pytest.raises(lf.ConfigError, match="margin=-1"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, margin=-1)
    with pytest.raises(lf.ConfigError, match="export_otlp='notaurl'"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, export_otlp="notaurl")
    with pytest.raises(lf.ConfigError, match="no such file"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, prices=str(tmp_path / "none.json"))


def test_listening_on_every_interface_without_a_token_warns(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LEVELFIELD_WATCH_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "levelfield", "watch", "--out", str(tmp_path / "out"), "-m",
                             "trajectory_exact_match", "--otlp-port", "0", "--host", "0.0.0.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        warning = proc.stderr.readline()
        receiving = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # waited for, its pipes closed
    assert "warning: listening on 0.0.0.0" in warning and "--auth-token" in warning
    assert "receiving OTLP/HTTP on" in receiving
