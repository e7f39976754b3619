"""Every Python snippet of README.md, docs/*.md and the guide (docs/guide/*.md) runs, offline, as written.

The snippets of one file run in order in one namespace, as a reader would paste them into one
session. A snippet that cannot run here (it needs a hosted judge model, a deployed agent, a
server you start yourself) is preceded by ``<!-- snippet: skip REASON -->`` and is reported as
skipped with that reason, never silently left out. Connections to anything but this machine are
refused while the snippets run, so "offline" is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import re
import socket
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "guide").glob("*.md"))]
# The guide's map lists the pages; it has nothing to run.
NO_SNIPPET = {ROOT / "docs" / "guide" / "index.md"}
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
    pages = {p for p in FILES if p != ROOT / "README.md"} - NO_SNIPPET
    assert {ROOT / "docs" / name for name in ("vertex.md", "adk.md", "langchain.md", "a2a.md")} <= pages
    assert {p.name for p in pages if p.parent.name == "guide"} >= {"running.md", "datasets.md", "comparing.md"}
    with_code = {s.values[0] for s in SNIPPETS if not s.values[3]}
    missing = sorted(str(p.relative_to(ROOT)) for p in pages - with_code)
    assert not missing, f"every docs page needs a snippet that runs: {missing}"


def test_the_guide_map_links_every_guide_page():
    guide = ROOT / "docs" / "guide"
    index = (guide / "index.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in guide.glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/guide/index.md does not link {page.name}"
            assert f"(docs/guide/{page.name})" in readme, f"README.md's 'Where next' does not link {page.name}"


def test_relative_links_in_the_docs_point_at_files_that_exist():
    broken = []
    for path in FILES:
        prose = re.sub(r"```.*?```|`[^`\n]*`", "", path.read_text(encoding="utf-8"), flags=re.S)  # links, not code
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if "://" in target or target.startswith("#"):
                continue
            if not (path.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_readme_shows_what_its_comparison_prints(offline):
    """The output under the README's first snippet is what that snippet prints (``...`` stands for
    lines left out, such as the latency, which changes from run to run)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = next(s.values for s in SNIPPETS if s.values[0] == ROOT / "README.md")
    shown = re.search(r"```text\n(.*?)```", readme[readme.index(first[4]):], re.S).group(1).splitlines()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(first[4], "README.md", "exec"), {"__name__": "readme_first_snippet"})  # noqa: S102 - our own docs
    lines = printed.getvalue().splitlines()
    at = 0
    for line in shown:
        if line.strip() == "...":
            continue
        assert line in lines[at:], f"README shows {line!r}, but the snippet printed:\n{printed.getvalue()}"
        at = lines.index(line, at) + 1


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
