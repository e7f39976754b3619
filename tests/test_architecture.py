"""The layering DESIGN.md fixes: core imports no adapter, and `import levelfield` stays light."""

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "levelfield" / "core"
# Module prefixes of the frameworks (not the bare "google" namespace, which .pth files create at start-up).
FRAMEWORKS = ("langchain", "langgraph", "a2a", "vertexai", "google.adk", "google.cloud.aiplatform", "google.genai")


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


def test_core_never_imports_adapters():
    offenders = [
        f"{path.relative_to(CORE.parent)} imports {name}"
        for path in CORE.rglob("*.py")
        for name in imported_modules(path)
        if "adapters" in name.split(".")
    ]
    assert offenders == []


def test_import_levelfield_loads_no_framework():
    code = ("import sys, levelfield; "
            f"print(sorted(m for m in sys.modules if m.startswith({FRAMEWORKS!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
