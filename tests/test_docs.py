"""The docs cover what users look for: every RobotGate parameter described, every event
class in the API reference, gate.crawl's options tabled on the crawl page, the
installation, quickstart, logging and changelog pages in the table of contents, every extra
tabled and every client's adapter in the reference, the index and CONTRIBUTING.  (The build
itself runs with ``sphinx-build -W`` in CI.)"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import robotgate.events
from robotgate import RobotGate
from robotgate.crawl import Frontier

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INTEGRATIONS = sorted(
    path.stem for path in (ROOT / "src" / "robotgate" / "integrations").iterdir()
    if not path.name.startswith("_")
)


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


def test_the_installation_page_tables_every_extra() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert {"test", "test-all", "docs", *INTEGRATIONS} <= set(extras)
    rows = set(re.findall(r"^\| `robotgate\[([\w-]+)\]` \|", (DOCS / "installation.md").read_text(),
                          re.MULTILINE))
    assert set(extras) - rows == set()


def test_every_client_is_in_the_reference_the_index_and_contributing() -> None:
    assert INTEGRATIONS == ["crawl4ai", "crawlee", "httpx", "playwright", "scrapy"]
    api = (DOCS / "api.md").read_text()
    index = (DOCS / "index.md").read_text().lower()
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    # The tree's entry for integrations/, up to the next directory's.
    entry = contributing.split("\n  integrations/", 1)[1].split("\n  store/", 1)[0]
    for name in INTEGRATIONS:
        assert f":: robotgate.integrations.{name}." in api, name
        assert name in index, name
        assert f"{name}." in entry or f"{name}/" in entry, name
