"""Every Python snippet of README.md, docs/*.md and the guide (docs/guide/*.md) runs, offline, as written.

The snippets of one file run in order in one namespace of a fresh Python process, as a reader would
paste them into one session (``_snippet_runner.py``): a snippet that needs an import shows it, since no
earlier page's import is there. A snippet that cannot run here (it needs a hosted judge model, a deployed agent, a
server you start yourself) is preceded by ``<!-- snippet: skip REASON -->`` and is reported as
skipped with that reason, never silently left out. Connections to anything but this machine are
refused while the snippets run, so "offline" is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import subprocess
import sys
import tempfile
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
RUNNER = Path(__file__).with_name("_snippet_runner.py")


class Session:
    """A fresh Python process running one page's snippets in order in one namespace."""

    def __init__(self, page: Path, workdir: Path) -> None:
        self.page = page
        self.done = -1  # the index of the last snippet run
        self.log = tempfile.TemporaryFile()  # what the snippets print, read when one fails
        self.process = subprocess.Popen([sys.executable, "-u", str(RUNNER), str(ROOT), str(workdir)], text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def run(self, code: str, where: str, timeout: float = 600) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"code": code, "where": where, "module": f"snippets_{self.page.stem}"}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise AssertionError(f"{where}: the snippet's process {'ended' if ready else 'hung'}; it printed:\n{self.printed()}")
        return json.loads(line)

    def printed(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-4000:]

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):  # a process that ended: its stdin is closed all the same
            self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()  # type: ignore[union-attr]
        self.log.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch directory that looks like the repository (samples/, tests/ linked), so files a snippet writes land here."""
    path = tmp_path_factory.mktemp("snippets")
    for name in ("samples", "tests", "docs"):
        (path / name).symlink_to(ROOT / name, target_is_directory=True)
    return path


@pytest.fixture(scope="module")
def sessions(workdir):
    """One live session at a time, the page's whose snippet runs now: the next page starts afresh."""
    live: dict[Path, Session] = {}

    def session(page: Path) -> Session:
        for other in [p for p in live if p != page]:
            live.pop(other).close()
        if page not in live:
            live[page] = Session(page, workdir)
        return live[page]

    yield session
    for each in live.values():
        each.close()


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


@pytest.mark.slow  # a fresh interpreter
def test_the_readme_shows_what_its_comparison_prints(workdir):
    """The output under the README's first snippet is what that snippet prints (``...`` stands for
    lines left out, such as the latency, which changes from run to run)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = next(s.values for s in SNIPPETS if s.values[0] == ROOT / "README.md")
    shown = re.search(r"```text\n(.*?)```", readme[readme.index(first[4]):], re.S).group(1).splitlines()
    session = Session(ROOT / "README.md", workdir)
    try:
        answer = session.run(first[4], "README.md")
    finally:
        session.close()
    assert answer["ok"], answer.get("error")
    printed = answer["stdout"]
    lines = printed.splitlines()
    at = 0
    for line in shown:
        if line.strip() == "...":
            continue
        assert line in lines[at:], f"README shows {line!r}, but the snippet printed:\n{printed}"
        at = lines.index(line, at) + 1


@pytest.mark.slow  # a fresh interpreter a page: 125 s, the largest share of the suite's time in one process
@pytest.mark.parametrize("path, index, line, directive, code", SNIPPETS)
def test_snippet_runs(sessions, path, index, line, directive, code):
    if directive.startswith("skip"):
        reason = directive[len("skip"):].strip()
        assert reason, f"{path.name}:{line}: a skipped snippet must say why (<!-- snippet: skip REASON -->)"
        pytest.skip(reason)
    session = sessions(path)
    # Run the earlier snippets of the page first when this one was selected alone (-k).
    earlier = [s.values for s in SNIPPETS if s.values[0] == path and session.done < s.values[1] < index]
    for _, i, at, flag, text in [*earlier, (path, index, line, directive, code)]:
        if flag.startswith("skip"):
            continue
        where = f"{path.relative_to(ROOT)}:{at}"
        answer = session.run(text, where)
        if not answer["ok"]:
            pytest.fail(f"{where} failed in a fresh process (blocks of the page run in order):\n{answer['error']}", pytrace=False)
        session.done = i


@pytest.mark.slow  # fresh interpreters
def test_a_page_sees_no_import_an_earlier_page_made(workdir):
    """Each page starts afresh: a name an earlier page imported is not there, as in a reader's new session."""
    first, second = Session(ROOT / "README.md", workdir), Session(ROOT / "docs" / "a2a.md", workdir)
    try:
        assert first.run("import levelfield as lf\nprint(lf.__name__)", "README.md:1") == {"ok": True, "stdout": "levelfield\n"}
        answer = second.run("lf.adapters", "docs/a2a.md:1")
    finally:
        first.close()
        second.close()
    assert not answer["ok"] and "NameError: name 'lf' is not defined" in answer["error"]
