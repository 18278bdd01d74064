"""The shape of the package: a pure core that loads no client, no cycles, small rooms,
no reach into the gate's private parts."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable, Iterable
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


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _import_targets(node: ast.stmt, package: str) -> list[str]:
    """The package modules an import statement in ``package`` imports: for ``from X
    import y``, X and X.y (where y is a module)."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        found = [target, *(f"{target}.{alias.name}" for alias in node.names)]
    elif isinstance(node, ast.Import):
        found = [alias.name for alias in node.names]
    else:
        return []
    return [name for name in found if name.startswith("robotgate")]


def _top_level_imports(path: Path) -> set[str]:
    """Package modules imported when ``path`` is imported (not lazily, not for typing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package_of(path)
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                continue
            found.update(_import_targets(node, package))

    visit(tree.body)
    return found


def _all_imports(path: Path) -> dict[str, int]:
    """Package modules ``path`` imports, inside functions too (not for typing), each
    with the line of its first import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package_of(path)
    typing_only = {id(inner) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for statement in node.body for inner in ast.walk(statement)}
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and id(node) not in typing_only:
            for target in _import_targets(node, package):
                found.setdefault(target, node.lineno)
    return found


def _module_cycles(imports: Callable[[Path], Iterable[str]]) -> list[str]:
    """Each import cycle between the package's modules, by ``imports``.  A package's
    __init__ importing its own submodules is not a cycle of concern (robotgate.x.y ->
    robotgate.x is the package being imported); a submodule importing it back is."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = {name: {m for m in imports(path) if m in modules and m != name
                    and not name.startswith(m + ".")}
             for name, path in modules.items()}
    found: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name)
    return found


@pytest.mark.slow
def test_no_import_cycle_inside_the_package() -> None:
    assert _module_cycles(_top_level_imports) == []


def test_no_import_cycle_between_modules_counting_imports_in_functions() -> None:
    assert _module_cycles(_all_imports) == []


def _part(module: str) -> str:
    """The top-level part a module belongs to: its subpackage under robotgate
    (store, politeness, gate, ...), or itself for a top-level module."""
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else "robotgate"


#: Imports between parts that close a cycle today, each for a reason; none may be added.
KNOWN_PART_CYCLE_EDGES: dict[tuple[str, str], str] = {}


def test_no_import_cycle_between_the_parts_of_the_package() -> None:
    # Parts: store, politeness, gate, policy, robots, crawl, cli, integrations, ... and
    # each top-level module; an import inside a function counts (it runs the same).
    assert {"store", "politeness", "gate", "policy", "robots", "crawl", "cli",
            "integrations"} <= {_part(_module_name(path)) for path in SRC.rglob("*.py")}
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        importer = _module_name(path)
        for target, line in _all_imports(path).items():
            pair = (_part(importer), _part(target))
            if pair[0] != pair[1] and pair not in KNOWN_PART_CYCLE_EDGES:
                edges.setdefault(pair, []).append(f"{importer}:{line} imports {target}")
    graph: dict[str, set[str]] = {}
    for importer, imported in edges:
        graph.setdefault(importer, set()).add(imported)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    closing = [f"{a} -> {b} ({'; '.join(where[:3])}) and back"
               for (a, b), where in sorted(edges.items()) if reaches(b, a)]
    assert closing == []


def test_the_core_and_the_stores_do_not_import_the_crawl() -> None:
    # The crawl drives the gate from outside the core (through CrawlGate): it may use
    # politeness/ and store/, never the other way round, nor the gate package.
    found = [f"{_module_name(path)}:{line} imports {target}"
             for path in sorted(SRC.rglob("*.py"))
             if _part(_module_name(path)) in ("politeness", "store", "policy", "robots")
             for target, line in _all_imports(path).items() if _part(target) == "crawl"]
    found += [f"{_module_name(path)}:{line} imports {target}"
              for path in sorted((SRC / "crawl").rglob("*.py"))
              for target, line in _all_imports(path).items() if _part(target) == "gate"]
    assert found == []


def _gate_names(tree: ast.AST) -> set[str]:
    """Names a module gives a RobotGate: gate, _gate, and any assigned RobotGate(...)."""
    names = {"gate", "_gate"}
    for node in ast.walk(tree):
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "RobotGate"):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id if isinstance(t, ast.Name) else t.attr
                         for t in targets if isinstance(t, (ast.Name, ast.Attribute)))
        elif isinstance(node, ast.arg) and node.annotation is not None and (
                ast.unparse(node.annotation).split(".")[-1].strip("'\"") == "RobotGate"):
            names.add(node.arg)
    return names


def _private_reads_of_the_gate(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each private attribute of a gate the code reads."""
    tree = ast.parse(source)
    return _private_reads(tree, _gate_names(tree))


def _private_reads(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, attribute) of each private attribute read of an object called one of
    ``names`` (``x._a``, ``self.x._a``, ``getattr(x, "_a")``)."""

    def is_gate(node: ast.expr) -> bool:
        return ((isinstance(node, ast.Name) and node.id in names)
                or (isinstance(node, ast.Attribute) and node.attr in names))

    def private(attr: str) -> bool:
        return attr.startswith("_") and not attr.startswith("__")

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and is_gate(node.value):
            found.append((node.lineno, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2
              and is_gate(node.args[0]) and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and private(node.args[1].value)):
            found.append((node.lineno, node.args[1].value))
    return found


def test_the_private_reach_in_check_sees_what_it_should() -> None:
    code = ("def f(gate, g: RobotGate, adapter):\n"
            "    gate._admission.turn(); adapter.gate._keys; adapter._gate._fetcher\n"
            "    getattr(gate, '_admission', None); g._cache; gate.fetch; gate.__class__\n"
            "    mine = RobotGate('x'); mine._scheduler\n")
    assert sorted(attr for _, attr in _private_reads_of_the_gate(code)) == [
        "_admission", "_admission", "_cache", "_fetcher", "_keys", "_scheduler"]


def test_no_code_outside_the_gate_package_reads_a_private_attribute_of_the_gate() -> None:
    found = [f"{path.relative_to(SRC.parent)}:{line} reads gate.{attr}"
             for path in sorted(SRC.rglob("*.py")) if path.relative_to(SRC).parts[0] != "gate"
             for line, attr in _private_reads_of_the_gate(path.read_text(encoding="utf-8"))]
    assert found == []


def test_no_module_reads_a_private_attribute_of_a_store() -> None:
    # What a store's own modules need (the Redis crawl: call, run_script,
    # note_data_lost) is a documented method of the store.
    found = [f"{path.relative_to(SRC.parent)}:{line} reads store.{attr}"
             for path in sorted(SRC.rglob("*.py"))
             for line, attr in _private_reads(ast.parse(path.read_text(encoding="utf-8")),
                                              {"store", "_store"})]
    assert found == []


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


def _gate_private_attributes() -> set[str]:
    """The private attributes a RobotGate sets on itself (``self._x = ...``)."""
    tree = ast.parse((SRC / "gate" / "gate.py").read_text(encoding="utf-8"))
    gate_class = next(node for node in ast.walk(tree)
                      if isinstance(node, ast.ClassDef) and node.name == "RobotGate")
    return {node.attr for node in ast.walk(gate_class)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name) and node.value.id == "self"
            and node.attr.startswith("_") and not node.attr.startswith("__")}


def test_no_module_outside_the_gate_reads_a_gate_private_by_any_name() -> None:
    # However the gate is named where it is held (``owner = ref()``), its private parts
    # stay its own: ``x._scheduler`` outside robotgate.gate reads one of them.
    private = _gate_private_attributes()
    assert {"_scheduler", "_servers", "_cache"} <= private
    found = [f"{path.relative_to(SRC.parent)}:{node.lineno} reads {ast.unparse(node)}"
             for path in sorted(SRC.rglob("*.py")) if path.relative_to(SRC).parts[0] != "gate"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr in private
             and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]
    assert found == []


def test_the_exceptions_import_no_http_client() -> None:
    code = ("import sys, robotgate\n"
            "robotgate.Disallowed, robotgate.GateClosed, robotgate.BodyTooLarge\n"
            "import robotgate.robots.usage\n"
            "print(sorted(m for m in ('aiohttp', 'httpx', 'yarl') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
