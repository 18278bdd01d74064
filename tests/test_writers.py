"""One writer for each piece of state: who may assign the fields of the core's records.

A server's pacing (:class:`Group`) and visit bookkeeping (:class:`HostState`) are
the scheduler's; what the robots.txt cache keeps of an origin (:class:`CachedSite`)
is the cache's, and a site's rules (:class:`SiteRules`) are an immutable value
that nothing writes once made (mypy holds its ``Final`` fields to that).
Others ask their owner (``scheduler.paced_from_now``, ``cache.bind``); a store
writes only the copies it keeps.  The scan below finds every assignment to a
field of these records on an object other than ``self``, anywhere in the package.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from robotgate.records import HostState
from robotgate.store.memory import MemoryStore

SRC = Path(__file__).resolve().parents[1] / "src" / "robotgate"


def _slots(module: str, *classes: str) -> frozenset[str]:
    """The ``__slots__`` the classes declare, read from the source (a class compiled
    with mypyc has no ``__slots__`` at run time)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse((SRC / module).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for statement in node.body:
                if (isinstance(statement, ast.Assign)
                        and ast.unparse(statement.targets[0]) == "__slots__"):
                    names |= set(ast.literal_eval(statement.value))
    return frozenset(names)


#: Each record's fields, and the modules (or packages, ending in "/") that may write them.
OWNERS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "Group": (_slots("politeness/scheduler.py", "Group", "Slots"),
              ("politeness/scheduler.py",)),
    "HostState": (frozenset(f.name for f in dataclasses.fields(HostState)),
                  ("politeness/scheduler.py", "records.py", "store/")),
    "CachedSite": (_slots("policy/site.py", "CachedSite"), ("politeness/robots_cache.py",)),
    "SiteRules": (_slots("policy/site.py", "SiteRules"), ()),
}

#: Writes of a same-named field of another class: (module, target) and whose field it is.
NOT_OURS = {
    ("integrations/scrapy/parser.py", "parser.rules"): "Protego's parser",
    ("crawl/host_queues.py", "host.active"): "the frontier's own per-host record",
    ("crawl/frontier.py", "record.interval"): "the frontier's own per-host record",
    ("robots/rfc9309.py", "merged.rules"): "a group of the parsed file",
    ("cli/html_report.py", "story.waiting"): "the report's own per-host story",
    ("integrations/crawlee.py", "request.state"): "crawlee's Request",
    ("integrations/crawlee.py", "context.request.state"): "crawlee's Request",
    ("integrations/crawlee.py", "self.request.state"): "crawlee's Request",
}


def _assigned_attributes(tree: ast.AST) -> list[tuple[int, ast.Attribute]]:
    found: list[tuple[int, ast.Attribute]] = []

    def walk(target: ast.expr, line: int) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                walk(element, line)
        elif isinstance(target, ast.Attribute):
            found.append((line, target))

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                walk(target, node.lineno)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            walk(node.target, node.lineno)
    return found


def foreign_writes(module: str, source: str) -> list[str]:
    """The assignments in ``source`` (the module ``module``, relative to the package)
    to a record's field outside the record's owners.  A field name two records share
    (``key``, ``interval``, ``backoff``) may be written by the owners of either."""
    bad = []
    for line, target in _assigned_attributes(ast.parse(source)):
        if ast.unparse(target.value) in ("self", "cls"):
            continue  # an object's own state
        if (module, ast.unparse(target)) in NOT_OURS:
            continue
        records = [record for record, (fields, _) in OWNERS.items() if target.attr in fields]
        if records and not any(_owns(module, OWNERS[record][1]) for record in records):
            bad.append(f"{module}:{line}: {ast.unparse(target)} (of {' or '.join(records)})")
    return bad


def _owns(module: str, owners: tuple[str, ...]) -> bool:
    return any(module == owner or (owner.endswith("/") and module.startswith(owner))
               for owner in owners)


def test_only_the_owners_write_the_records() -> None:
    bad: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        bad += foreign_writes(path.relative_to(SRC).as_posix(),
                              path.read_text(encoding="utf-8"))
    assert bad == []


@pytest.mark.parametrize("module,source", [
    ("politeness/servers.py", "def f(group):\n    group.last = now\n"),
    ("politeness/request_turn.py", "def f(held, g):\n    held.host, held.key = g.state, g.key\n"),
    ("politeness/robots_cache.py", "def f(site):\n    site.fresh_until = 0.0\n"),
    ("politeness/robots_cache.py", "def f(host):\n    host.visits_since_check = 0\n"),
    ("gate/gate.py", "def f(state):\n    state.next_allowed += 1\n"),
])
def test_the_scan_finds_a_write_outside_the_owner(module: str, source: str) -> None:
    assert foreign_writes(module, source)


def test_the_fields_are_read_from_the_source() -> None:
    assert {"last", "paused_until", "free", "waiters"} <= OWNERS["Group"][0]
    assert {"used", "host", "key", "site"} <= OWNERS["CachedSite"][0]
    assert {"rules", "verdict", "interval", "fresh_until"} <= OWNERS["SiteRules"][0]


def test_the_owners_own_writes_pass() -> None:
    assert foreign_writes("politeness/scheduler.py", "def f(group):\n    group.last = 1\n") == []
    assert foreign_writes("politeness/servers.py", "def f(self):\n    self.key = 1\n") == []


async def test_the_memory_store_keeps_a_copy_of_host_state() -> None:
    store = MemoryStore()
    state = HostState("http://a.example", visits=1)
    await store.save_host(state)
    state.visits = 5  # the scheduler goes on writing its own
    got = await store.load_host("http://a.example")
    assert got == HostState("http://a.example", visits=1) and got is not state
    got.visits = 9  # and what a caller loaded is its own
    assert (await store.load_host("http://a.example")) == HostState("http://a.example", visits=1)


def test_only_a_store_that_says_so_answers_without_an_await() -> None:
    class Logged(MemoryStore):  # its coroutines may do more: awaited
        async def save_host(self, state: HostState) -> None:
            await super().save_host(state)

    class Quick(MemoryStore):
        answers_at_once = True

    assert MemoryStore.answers_at_once and MemoryStore().at_once() is not None
    assert not Logged.answers_at_once and Logged().at_once() is None
    quick = Quick()
    assert quick.at_once() is quick
