"""The RobotsTxt interface, the dialect registry, and the dialects kept apart."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import robotgate
import robotgate.robots
from robotgate import RequestRate, RobotsTxt
from robotgate.decision import Decision
from robotgate.robots import DIALECTS, ClassicRobotsTxt, Rfc9309Rules
from robotgate.robots import rules as rules_module
from tests.support.dialects import registered_dialect

ROBOTS = robotgate.robots.__file__
TEXT = "User-agent: *\nDisallow: /a\nCrawl-delay: 2\n"


def test_public_names_are_the_interface() -> None:
    assert robotgate.RobotsTxt is rules_module.RobotsTxt
    assert robotgate.RequestRate is rules_module.RequestRate
    assert DIALECTS == ("rfc9309", "classic")


def test_robotstxt_parse_dispatches_by_dialect() -> None:
    rfc = RobotsTxt.parse(TEXT)
    classic = RobotsTxt.parse(TEXT, dialect="classic", url="http://example.com/robots.txt")
    assert type(rfc) is Rfc9309Rules and type(classic) is ClassicRobotsTxt
    assert isinstance(rfc, RobotsTxt) and isinstance(classic, RobotsTxt)
    for rules in (rfc, classic):
        assert not rules.allowed("/a", "FooBot")
        assert rules.allowed("/b", "FooBot")
        assert isinstance(rules.decide("/a", "FooBot"), Decision)
    assert rfc.crawl_delay("FooBot") == 2.0 and classic.crawl_delay("FooBot") is None


def test_classic_parse_on_the_class_reads_classic() -> None:
    # Issue 12 item 19: this raised AttributeError (the RFC parse built a
    # ClassicRobotsTxt without its records).
    rules = ClassicRobotsTxt.parse("User-agent: *\nAllow: /a\nDisallow: /\n")
    assert type(rules) is ClassicRobotsTxt
    assert not rules.allowed("/a", "FooBot")  # classic knows no Allow
    assert not rules.decide("/a", "FooBot").allowed
    assert rules.agents == ["*"]
    rules = ClassicRobotsTxt.parse(b"User-agent: *\nDisallow: x\n", url="http://h/robots.txt")
    assert not rules.allowed("http://h/x", "FooBot")
    assert Rfc9309Rules.parse(TEXT).allowed("/b", "FooBot")


def test_a_dialect_class_refuses_another_dialect() -> None:
    with pytest.raises(ValueError, match="cannot read"):
        ClassicRobotsTxt.parse(TEXT, dialect="rfc9309")
    with pytest.raises(ValueError, match="cannot read"):
        Rfc9309Rules.parse(TEXT, dialect="classic")


def test_a_dialect_never_passes_for_another() -> None:
    # Asked about the interface first, as a caller does: in the compiled build a class
    # made without ABCMeta.__new__ would share the interface's answers and say yes below.
    rfc = RobotsTxt.parse(TEXT)
    classic = RobotsTxt.parse(TEXT, dialect="classic", url="http://example.com/robots.txt")
    assert isinstance(rfc, RobotsTxt) and isinstance(classic, RobotsTxt)
    assert issubclass(Rfc9309Rules, RobotsTxt) and issubclass(ClassicRobotsTxt, RobotsTxt)
    assert not isinstance(classic, Rfc9309Rules) and not isinstance(rfc, ClassicRobotsTxt)
    assert not issubclass(ClassicRobotsTxt, Rfc9309Rules)
    assert not issubclass(Rfc9309Rules, ClassicRobotsTxt)
    with pytest.raises(ValueError, match="cannot read"):
        Rfc9309Rules.parse(TEXT, dialect="classic")


@pytest.mark.parametrize("dialect", ["google", "", "RFC9309"])
def test_unknown_dialect_is_a_value_error(dialect: str) -> None:
    with pytest.raises(ValueError, match=r"unknown robots\.txt dialect"):
        RobotsTxt.parse(TEXT, dialect=dialect)


def test_the_interface_leaves_every_query_to_the_dialect() -> None:
    bare = RobotsTxt()
    queries = [lambda: bare.allowed("/", "x"), lambda: bare.decide("/", "x"),
               lambda: bare.crawl_delay("x"), lambda: bare.request_rate("x"),
               lambda: bare.sitemaps, lambda: bare.agents]
    for query in queries:
        with pytest.raises(NotImplementedError):
            query()
    assert bare.delay_lines("x") == () and bare.delay_line("x") is None


def test_queries_are_the_concrete_classes_own_methods() -> None:
    # The hot path: no inherited wrapper between allowed() and the dialect's code.
    for cls in (Rfc9309Rules, ClassicRobotsTxt):
        for name in ("allowed", "decide", "crawl_delay", "request_rate", "sitemaps", "agents"):
            assert name in vars(cls), (cls, name)
    assert not hasattr(Rfc9309Rules(), "__dict__")  # still slotted


def test_a_third_dialect_is_one_registration() -> None:
    class Everything(RobotsTxt):
        __slots__ = ()
        DIALECT = "test-everything"

        def allowed(self, url: str, user_agent: str) -> bool:
            return True

        def decide(self, url: str, user_agent: str) -> Decision:
            return Decision(True, "allowed: test dialect")

        def crawl_delay(self, user_agent: str) -> float | None:
            return None

        def request_rate(self, user_agent: str) -> RequestRate | None:
            return None

        @property
        def sitemaps(self) -> list[str]:
            return []

        @property
        def agents(self) -> list[str]:
            return []

    seen: list[tuple[str, str | None]] = []

    def parse(text: str, url: str | None) -> Everything:
        seen.append((text, url))
        return Everything()

    with registered_dialect("test-everything", parse, Everything):
        rules = RobotsTxt.parse(b"\xef\xbb\xbfDisallow: /\n", dialect="test-everything", url="u")
        assert isinstance(rules, Everything) and rules.allowed("/", "x")
        assert isinstance(Everything.parse("y"), Everything)
        assert seen == [("Disallow: /\n", "u"), ("y", None)]  # decoded for it: BOM gone
    assert rules_module.dialects() == DIALECTS


def _imports(path: Path) -> set[str]:
    """The robotgate modules a module imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ["robotgate", "robots"][: 2 - (node.level - 1)] if node.level else []
            mod = ".".join([*base, node.module] if node.module else base)
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_dialects_do_not_know_each_other() -> None:
    here = Path(ROBOTS).parent
    classic = set().union(*(_imports(p) for p in (here / "classic").glob("*.py")))
    rfc = _imports(here / "rfc9309.py")
    rules = _imports(here / "rules.py")
    assert not any("rfc9309" in m for m in classic), classic
    assert not any("classic" in m for m in rfc), rfc
    assert not any("rfc9309" in m or "classic" in m for m in rules), rules
