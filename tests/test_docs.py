"""The docs cover what users look for: every RobotGate parameter described, every event
class in the API reference, gate.crawl's options tabled on the crawl page, and the
installation, quickstart, logging and changelog pages in the table of contents.  (The
build itself runs with ``sphinx-build -W`` in CI.)"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import robotgate.events
from robotgate import RobotGate
from robotgate.crawl import Frontier

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_parameter_of_robotgate_is_described() -> None:
    doc = inspect.getdoc(RobotGate) or ""
    described = {name.replace("\\_", "_") for name in re.findall(r":param ([\w\\]+):", doc)}
    parameters = set(inspect.signature(RobotGate).parameters)
    assert parameters - described == set()
    assert described - parameters == set()


def test_every_event_class_is_in_the_api_reference() -> None:
    api = (DOCS / "api.md").read_text()
    events = [name for name in robotgate.events.__all__
              if isinstance(getattr(robotgate.events, name), type)]
    assert len(events) >= 8
    missing = [name for name in events if f"autoclass:: robotgate.events.{name}\n" not in api]
    assert missing == []


def _option_rows(page: str) -> set[str]:
    return {name for cell in re.findall(r"^\| (`[^|]+`) \|", page, re.MULTILINE)
            for name in re.findall(r"`(\w+)`", cell)}


def test_the_crawl_page_tables_every_option_of_gate_crawl_and_the_cli_page_none() -> None:
    options = set(inspect.signature(Frontier).parameters) - {"gate", "urls", "handler", "state"}
    options.add("name")  # gate.crawl's own: the crawl kept in the store
    assert options - _option_rows((DOCS / "crawl.md").read_text()) == set()
    cli = (DOCS / "cli.md").read_text()
    assert not {"per_host", "max_queued", "on_result"} & _option_rows(cli)
    assert "crawl.md#the-frontier-gate-crawl" in cli


def test_the_table_of_contents_has_installation_quickstart_logging_and_changelog() -> None:
    index = (DOCS / "index.md").read_text()
    for page in ("installation", "quickstart", "logging", "changelog"):
        assert re.search(rf"^{page}$", index, re.MULTILINE), page
        assert (DOCS / f"{page}.md").exists(), page
    assert "{include} ../CHANGELOG.md" in (DOCS / "changelog.md").read_text()
