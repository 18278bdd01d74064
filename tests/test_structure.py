"""The shape of the package: a pure core that loads no client, no cycles, small rooms."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "robotgate"


@pytest.mark.slow
def test_pure_core_imports_no_client_or_store() -> None:
    code = (
        "import sys\n"
        "from robotgate import RobotsTxt, FetchPolicy, Decision, InvalidURL\n"
        "import robotgate.robots, robotgate.policy, robotgate.policy.fetch_flow\n"
        "import robotgate.policy.site, robotgate.policy.pacing, robotgate.robots.usage\n"
        "shell = {'aiohttp', 'aiolimiter', 'redis', 'sqlite3', 'httpx', 'scrapy'}\n"
        "bad = shell & set(sys.modules)\n"
        "print(sorted(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(path: Path) -> set[str]:
    """Package modules imported when ``path`` is imported (not lazily, not for typing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.startswith("robotgate"):
                    found.add(target)
                    for alias in node.names:
                        found.add(f"{target}.{alias.name}")
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("robotgate"))

    visit(tree.body)
    return found


@pytest.mark.slow
def test_no_import_cycle_inside_the_package() -> None:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = {
        name: {m for m in _top_level_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    # A package's __init__ importing its own submodules is not a cycle of concern;
    # a submodule importing its package's __init__ back is.
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if node.startswith(nxt + ".") and modules[nxt].name == "__init__.py":
                continue  # robotgate.x.y -> robotgate.x (the package being imported)
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name)


def _imported_roots(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports, lazily too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found


def test_tests_and_benchmarks_do_not_import_each_other() -> None:
    # What both need lives in testbed/, which imports neither.
    root = SRC.parents[1]
    forbidden = {"tests": {"benchmarks"}, "benchmarks": {"tests"},
                 "testbed": {"tests", "benchmarks"}}
    found = [f"{path.relative_to(root)} imports {name}"
             for top, names in forbidden.items()
             for path in sorted((root / top).rglob("*.py"))
             for name in sorted(_imported_roots(path) & names)]
    assert found == []
