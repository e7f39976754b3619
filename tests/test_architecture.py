"""The layering DESIGN.md fixes: arrows only run down (core at the bottom, its rooms in order), no
import circle, and `import levelfield` stays light. Every import counts: lazy ones inside functions
and those under ``if TYPE_CHECKING:`` too (a type-only arrow is still a dependency a reader follows)."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "levelfield"
# Module prefixes of the frameworks (not the bare "google" namespace, which .pth files create at start-up).
FRAMEWORKS = ("langchain", "langgraph", "a2a", "vertexai", "google.adk", "google.cloud.aiplatform", "google.genai", "ray")
# The rooms of core, lowest first: each may import core.errors and the rooms before it, never one after it.
CORE_ROOMS = ("data", "score", "results", "stats", "run")
# Packages above core, and what sits above them: formats, adapters, judges and executors never reach up here.
UPPER = ("levelfield.cli", "levelfield._entry", "levelfield.report", "levelfield.view", "levelfield.comparison",
         "levelfield.gate", "levelfield.watch")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The levelfield modules ``name`` imports (a ``from pkg import sub`` names the submodule)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES and "." in target:
                target = target.rpartition(".")[0]
            if target in MODULES and target != name:
                found.add(target)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def room_of(name: str) -> str | None:
    """The core room a module lives in (``"data"``, ...), ``"errors"`` for core.errors, None outside core."""
    parts = name.split(".")
    if parts[:2] != ["levelfield", "_core"] or len(parts) < 3:
        return None
    return parts[2]


def test_every_core_module_lives_in_a_room():
    loose = [n for n in MODULES if room_of(n) is not None and room_of(n) not in CORE_ROOMS + ("errors",)]
    assert loose == []


def test_core_rooms_import_only_the_rooms_below_them():
    offenders = []
    for name, targets in GRAPH.items():
        room = room_of(name)
        if room not in CORE_ROOMS:
            continue
        allowed = set(CORE_ROOMS[: CORE_ROOMS.index(room) + 1]) | {"errors"}
        offenders += [f"{name} imports {t}" for t in targets if room_of(t) not in allowed and t != "levelfield._core"]
    assert offenders == []


def test_core_imports_nothing_above_it():
    offenders = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith("levelfield._core")
        for target in targets
        if not target.startswith("levelfield._core")
    ]
    assert offenders == []


def test_formats_adapters_judges_and_executors_never_import_what_sits_above_them():
    offenders = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith(("levelfield.formats", "levelfield.adapters", "levelfield.judge", "levelfield.executors",
                            "levelfield.simulation"))
        for target in targets
        if target.startswith(UPPER)
    ]
    assert offenders == []


def test_the_comparison_wing_knows_nothing_of_its_report_gate_command_line_or_entry_points():
    wing = [n for n in MODULES if n.startswith("levelfield.comparison")]
    assert "levelfield.comparison._comparison" in wing
    offenders = [f"{n} imports {t}" for n in wing for t in GRAPH[n]
                 if t.startswith(("levelfield.report", "levelfield.gate", "levelfield.cli", "levelfield._entry"))]
    assert offenders == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_planted_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_between_modules():
    assert _cycles(GRAPH) == []


def test_core_never_imports_adapters():
    offenders = [f"{n} imports {t}" for n, ts in GRAPH.items() if n.startswith("levelfield._core")
                 for t in ts if t.startswith("levelfield.adapters")]
    assert offenders == []


def test_import_levelfield_loads_no_framework():
    code = ("import sys, levelfield; "
            f"print(sorted(m for m in sys.modules if m.startswith({FRAMEWORKS!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_verdict_and_the_text_of_a_comparison_sit_below_it():
    """They read a comparison through a protocol: not even a type-checking import of it (or the report, or the CLI)."""
    below = ("levelfield.comparison._comparison", "levelfield.comparison._cases", "levelfield.comparison._record",
             "levelfield.report", "levelfield.cli")
    offenders = [f"{name} imports {t}" for name in ("levelfield.comparison._verdict", "levelfield.comparison._text")
                 for t in GRAPH[name] if t.startswith(below)]
    assert offenders == []


# The top level of the package: its machinery, the public homes and folders. A new loose module is a
# deliberate change: add it here (a public home) or give it a leading underscore (or a folder).
MACHINERY = ["__init__", "__main__", "_lazy", "_serving", "pytest_plugin"]  # pytest_plugin: pytest's entry point
PUBLIC_HOMES = ["gate", "metrics", "stats"]
FOLDERS = ["_core", "_entry", "adapters", "benchmarks", "cli", "comparison", "executors", "formats", "judge", "report", "simulation",
           "testing", "tools", "view", "watch"]


def test_the_top_level_holds_machinery_public_homes_and_folders():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert loose == sorted(MACHINERY + PUBLIC_HOMES), "a new loose module: a public home, machinery, or _private"
    assert folders == FOLDERS
    public_loose = [m for m in loose if not m.startswith("_")]
    assert len(public_loose) <= 8


def test_the_comparison_wing_and_the_entry_points_are_private_inside():
    """Their objects have one public home (``levelfield``): no second address through a public module path."""
    inside = [n for n in MODULES if n.startswith(("levelfield.comparison.", "levelfield._entry."))]
    assert len(inside) >= 12
    assert [n for n in inside if n.startswith("levelfield.comparison.") and not n.rpartition(".")[2].startswith("_")] == []
