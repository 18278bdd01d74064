"""The docs cover what users look for: every RobotGate parameter described, every event
class in the API reference, gate.crawl's options tabled on the crawl page, the
installation, quickstart, logging and changelog pages in the table of contents, every extra
tabled and every client's adapter in the reference, the index and CONTRIBUTING.  (The build
itself runs with ``sphinx-build -W`` in CI.)"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import robotgate.events
from robotgate import RobotGate
from robotgate.crawl import Frontier

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The clients, each an extra: browser_network is no client but the browser clients'
# shared network (the floor and the route's cookie rules).
INTEGRATIONS = sorted(
    path.stem for path in (ROOT / "src" / "robotgate" / "integrations").iterdir()
    if not path.name.startswith("_") and path.name != "browser_network"
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


def _readme_cells(title: str) -> list[str]:
    """The cells of the README comparison table's row ``title``."""
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == title:
            return cells[1:]
    raise AssertionError(f"no row {title!r} in the README's table")


@pytest.mark.soak  # a loopback crawl with a Crawl-delay and a Retry-After: CI runs it every time
def test_the_readme_table_says_what_compare_clients_measures_of_robotgate(tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_clients.py"), "--only",
         "robotgate,robotparser", "--no-progress", "--json", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "python benchmarks/compare_clients.py " in done.stdout
    cells = json.loads(out.read_text())["tools"]["robotgate"]["cells"]
    parser = json.loads(out.read_text())["tools"]["robotparser"]["cells"]
    assert (cells["wildcards"], cells["explains"], cells["5xx"], cells["reset"]) == (
        "yes", "yes", "disallow all", "disallow all")
    assert cells["once"] == "1 fetch, 0 disallowed page(s) fetched"
    assert cells["delay"].startswith("Crawl-delay: yes") and "Request-rate: yes" in cells["delay"]
    assert cells["retry"].startswith("rests")
    assert parser["5xx"] == "disallow all" and parser["wildcards"].startswith("no: ")
    # The README says the same of robotgate (its first column) and of urllib.robotparser.
    assert _readme_cells("robots.txt 5xx")[0] == _readme_cells("robots.txt 5xx")[3] == (
        "disallow all")
    assert _readme_cells("robots.txt connection reset")[0] == "disallow all"
    assert _readme_cells("`*` and `$` wildcards, longest match")[0] == "yes"
    assert _readme_cells("`Crawl-delay` / `Request-rate` applied")[0].startswith("both")
    assert _readme_cells("429 with `Retry-After: 2`")[0].startswith("the host rests")
