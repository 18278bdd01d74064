"""The crawl asks the gate through CrawlGate alone, and RobotGate is one: every member
public and documented, and a type checker holds RobotGate to the list."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from robotgate import RobotGate
from robotgate.crawl import CrawlGate, CrawlResponse
from robotgate.decision import Decision
from robotgate.events import Event, TurnWaited, UrlSkipped

SRC = Path(__file__).resolve().parents[2] / "src"


def _members(protocol: type) -> list[str]:
    return sorted(name for name in vars(protocol) if not name.startswith("_"))


def test_every_member_of_crawl_gate_is_public_and_documented_on_robot_gate() -> None:
    names = _members(CrawlGate)
    assert {"fetch", "allowed", "decide", "pace_key", "server_wait", "report_skipped",
            "report_waited"} <= set(names)
    gate = RobotGate("Bot/1")
    undocumented = []
    for name in names:
        assert hasattr(gate, name), name
        member = inspect.getattr_static(RobotGate, name, None)
        if member is None:  # an attribute set in __init__: documented as a parameter
            documented = f":param {name}:" in (RobotGate.__doc__ or "")
        else:
            documented = bool(inspect.getdoc(member))
        if not documented:
            undocumented.append(name)
    assert undocumented == []


def test_report_skipped_and_waited_reach_the_gate_s_listeners() -> None:
    heard: list[Event] = []
    gate = RobotGate("Bot/1", on_event=heard.append, metrics=False)
    gate.report_skipped("http://h.example/no", Decision(False, "Disallow: /no (line 2)"))
    gate.report_waited("http://h.example/a", 0.0, "interval")  # no wait: no event
    gate.report_waited("http://h.example/a", 1.5, "crawl-delay")
    assert [(type(e), e.url) for e in heard] == [  # type: ignore[attr-defined]
        (UrlSkipped, "http://h.example/no"), (TurnWaited, "http://h.example/a")]
    skipped, waited = heard
    assert isinstance(skipped, UrlSkipped) and skipped.reason == "Disallow: /no (line 2)"
    assert isinstance(waited, TurnWaited) and (waited.seconds, waited.reason) == (1.5,
                                                                                 "crawl-delay")
    RobotGate("Bot/1", metrics=False).report_waited("http://h.example/a", 1.0, "interval")


def test_crawl_response_names_what_the_frontier_reads() -> None:
    assert _members(CrawlResponse) == ["headers", "read", "status", "url"]


def _mypy(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "check.py"
    path.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), str(path)],
        capture_output=True, text=True, timeout=300, cwd=SRC.parent, check=False)


@pytest.mark.soak  # a run of mypy: CI runs it every time
def test_the_type_checker_holds_robot_gate_and_fakes_to_crawl_gate(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    result = _mypy("""
        import aiohttp
        from robotgate import RobotGate
        from robotgate.crawl import CrawlGate
        from testbed.crawl_gate import PlainCrawlGate

        def as_crawl_gate(gate: RobotGate) -> CrawlGate[aiohttp.ClientResponse]:
            return gate

        class NoReports(PlainCrawlGate):  # the rest of a gate, but no fetch
            def pace_key(self, url: str) -> str:
                return url

            async def allowed(self, url: str) -> bool:
                return True

        def not_a_crawl_gate(gate: NoReports) -> CrawlGate[aiohttp.ClientResponse]:
            return gate
    """, tmp_path)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    # Only the fake lacking members fails; RobotGate passes.
    assert len(errors) == 1 and "check.py:18:" in errors[0], result.stdout
    assert '"NoReports"' in errors[0] and "CrawlGate" in errors[0], result.stdout
