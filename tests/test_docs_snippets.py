"""Every Python snippet of README.md and docs/*.md runs, offline, as written.

The snippets of one file run in order in one namespace, as a reader would paste them into one
session. A snippet that cannot run here (it needs a hosted judge model, a deployed agent, a
server you start yourself) is preceded by ``<!-- snippet: skip REASON -->`` and is reported as
skipped with that reason, never silently left out. Connections to anything but this machine are
refused while the snippets run, so "offline" is checked, not assumed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!--\s*snippet:\s*(?P<directive>[^>]*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def _snippets() -> list:
    params = []
    for path in FILES:
        for index, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            line = path.read_text(encoding="utf-8")[: match.start("code")].count("\n") + 1
            directive = (match.group("directive") or "").strip()
            params.append(pytest.param(path, index, line, directive, match.group("code"),
                                       id=f"{path.relative_to(ROOT)}:{line}"))
    return params


SNIPPETS = _snippets()
_namespaces: dict[Path, dict] = {}


def _loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return True  # a Unix socket
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch directory that looks like the repository (samples/, tests/ linked), so files a snippet writes land here."""
    path = tmp_path_factory.mktemp("snippets")
    for name in ("samples", "tests", "docs"):
        (path / name).symlink_to(ROOT / name, target_is_directory=True)
    return path


@pytest.fixture
def offline(monkeypatch, workdir):
    connect = socket.socket.connect

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise ConnectionRefusedError(f"docs snippets run offline; refused a connection to {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{workdir / 'mlflow.db'}")
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(str(ROOT))


def test_every_docs_page_has_a_snippet():
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert {"vertex.md", "adk.md", "langchain.md", "a2a.md"} <= pages
    with_code = {s.values[0].name for s in SNIPPETS if s.values[0].parent.name == "docs" and not s.values[3]}
    assert pages <= with_code, "every docs page needs a snippet that runs"


@pytest.mark.parametrize("path, index, line, directive, code", SNIPPETS)
def test_snippet_runs(offline, path, index, line, directive, code):
    if directive.startswith("skip"):
        reason = directive[len("skip"):].strip()
        assert reason, f"{path.name}:{line}: a skipped snippet must say why (<!-- snippet: skip REASON -->)"
        pytest.skip(reason)
    namespace = _namespaces.setdefault(path, {"__name__": f"snippets_{path.stem}", "__done__": -1})
    # Run the earlier snippets of the page first when this one was selected alone (-k).
    earlier = [s.values for s in SNIPPETS if s.values[0] == path and namespace["__done__"] < s.values[1] < index]
    for _, i, at, flag, text in [*earlier, (path, index, line, directive, code)]:
        if flag.startswith("skip"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(text, f"{path.relative_to(ROOT)}:{at}", "exec"), namespace)  # noqa: S102 - our own docs
        namespace["__done__"] = i
