"""Logging: what an operator needs, on the named loggers docs/logging.md lists, at the level
it belongs to, and without secrets."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import pytest

from robotgate import Network, RobotGate
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsResponse
from robotgate.policy.pacing import Pacing
from robotgate.policy.provenance import INPUT
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.politeness.scheduler import Group
from robotgate.records import HostState
from robotgate.redaction import LOGGERS, RedactingFilter, logger
from tests.support.clock import Clock
from tests.support.request_path import A, DictStore, Transport, begun, build, group_of
from tests.support.transports import FakeTransport

ROOT = Path(__file__).resolve().parent.parent
SITE = "http://site.example"
ROBOTS = SITE + "/robots.txt"
AGENT = "LogBot/1.0"


def _lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == logger]


async def test_each_robots_txt_fetch_is_one_info_line_with_its_outcome(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    rules = b"User-agent: *\nDisallow: /x\n"
    await RobotsFetcher(FakeTransport({ROBOTS: RobotsResponse(200, {}, rules)}),
                        FetchPolicy()).fetch(SITE, None)
    await RobotsFetcher(FakeTransport({ROBOTS: RobotsResponse(404, {})}),
                        FetchPolicy()).fetch(SITE, None)
    await RobotsFetcher(FakeTransport(raises=OSError("reset")), FetchPolicy()).fetch(SITE, None)
    [ok, missing, failed] = _lines(caplog, "robotgate.robots")
    assert ok[0] == missing[0] == failed[0] == "INFO"
    assert re.fullmatch(rf"{ROBOTS}: ok \(robots.txt answered 200\), {len(rules)} bytes "
                        r"in \d+\.\d\ds", ok[1]), ok
    assert missing[1].startswith(f"{ROBOTS}: unavailable (robots.txt answered 404)")
    assert failed[1].startswith(f"{ROBOTS}: unreachable (") and "reset" in failed[1]


async def test_a_site_skipped_for_its_crawl_delay_is_told_once_at_info(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    clock = Clock()
    transport = Transport(clock, {A: b"User-agent: *\nCrawl-delay: 600\n"})
    parts = build(clock, transport=transport,
                      pacing=Pacing(delay=1.0, max_crawl_delay=30.0))
    await parts.verdicts.site(A)
    for _ in range(3):
        assert parts.verdicts.check(A + "/page") is not None  # decided from the cached rules
    told = _lines(caplog, "robotgate.pacing")
    assert told == [("INFO", f"{A}: Crawl-delay 600 s exceeds max_crawl_delay 30 s: the origin "
                             "is skipped (a higher max_crawl_delay, or "
                             "Pacing(on_long_delay='honour'), crawls it)")]


async def test_back_off_started_and_eased_are_told_on_robotgate_pacing(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    clock = Clock()
    parts = build(clock, pacing=Pacing(delay=1.0, backoff_recovery=2))
    await parts.verdicts.site(A)
    clock.advance(1.0)
    got = begun(parts.requests.turn(A + "/1", INPUT))
    group = got if isinstance(got, Group) else await group_of(got)
    for status in (503, 200, 200, 200):  # widened, narrowed, gone, nothing left to ease
        assert parts.servers.answered(group, status, None) is None
    parts.servers.done(group)
    told = _lines(caplog, "robotgate.pacing")
    assert [level for level, _ in told] == ["INFO", "DEBUG", "INFO"], told
    assert re.fullmatch(r"host:a\.example answered 503: next request in \d+\.\d\ds", told[0][1])
    assert re.fullmatch(r"host:a\.example back-off eased: \d+\.\d\ds extra left", told[1][1])
    assert told[2][1] == "host:a.example back-off eased: 0.00s extra left"


class FailingStore(DictStore):
    """A store whose errors show its URL, password and all, as client libraries' may."""

    url = "redis://default:hunter2@10.0.0.1:6379/0"

    async def save_host(self, state: HostState) -> None:
        raise ConnectionError(f"Error connecting to {self.url}")


async def test_store_trouble_warns_once_then_tells_each_at_debug_without_the_password(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    clock = Clock()
    parts = build(clock, store=FailingStore(), delay=0.0)
    await parts.verdicts.site(A)
    for n in range(3):
        got = begun(parts.requests.turn(A + f"/{n}", INPUT))
        group = got if isinstance(got, Group) else await group_of(got)
        pending = parts.servers.answered(group, 200, None)
        assert pending is not None
        await pending
        parts.servers.done(group)
    told = _lines(caplog, "robotgate.store")
    assert [level for level, _ in told] == ["WARNING", "DEBUG", "DEBUG"], told
    assert "could not save host state" in told[0][1] and "10.0.0.1" in told[0][1]
    assert "stats['store_errors']" in told[0][1] and "3 store errors so far" in told[2][1]
    assert not [r for r in caplog.records if "hunter2" in r.getMessage()]


async def test_a_session_at_debug_shows_no_password_of_a_url(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    transport = FakeTransport({ROBOTS: RobotsResponse(200, {}, b"User-agent: *\nDisallow: /x")})
    async with RobotGate(AGENT, network=Network(robots_transport=transport)) as gate:
        assert await gate.allowed("http://user:s3cret@site.example/page") is True
        assert await gate.allowed("http://user:s3cret@site.example/x/1") is False
    assert [name for name, _, _ in caplog.record_tuples].count("robotgate.robots") == 1
    assert not [r for r in caplog.records if "s3cret" in r.getMessage()]


def _logger_names_in_source() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src" / "robotgate").rglob("*.py"):
        text = path.read_text()
        names.update(re.findall(r'(?:getLogger|logger)\("([a-z0-9_.]+)"\)', text))
        if "getLogger(__name__)" in text:
            module = path.relative_to(ROOT / "src").with_suffix("").as_posix()
            names.add(module.replace("/", ".").removesuffix(".__init__"))
    return names


def test_the_logging_page_names_every_logger() -> None:
    page = (ROOT / "docs" / "logging.md").read_text()
    first_cells = re.findall(r"^\| (`robotgate[^|]*) \|", page, re.MULTILINE)
    documented = {name for cell in first_cells for name in re.findall(r"`([a-z_.]+)`", cell)}
    names = _logger_names_in_source()
    assert {"robotgate.robots", "robotgate.pacing", "robotgate.store"} <= names
    assert names - documented == set()
    # Each one is a redacting logger (robotgate.redaction.LOGGERS), and each listed is used.
    assert names == set(LOGGERS)


def _import_every_module() -> None:
    """Import each module of robotgate that imports here (an extra not installed: skipped)."""
    import robotgate

    for module in pkgutil.walk_packages(robotgate.__path__, "robotgate."):
        try:
            importlib.import_module(module.name)
        except ImportError:
            continue


@pytest.mark.slow  # imports every module, the clients' too
def test_every_robotgate_logger_redacts_its_records() -> None:
    _import_every_module()
    loggers = {name: log for name, log in logging.root.manager.loggerDict.items()
               if (name == "robotgate" or name.startswith("robotgate."))
               and isinstance(log, logging.Logger)}
    assert set(LOGGERS) <= set(loggers)
    unredacted = [name for name, log in loggers.items()
                  if not any(isinstance(f, RedactingFilter) for f in log.filters)]
    assert unredacted == []
    with pytest.raises(ValueError, match=r"not in robotgate\.redaction\.LOGGERS"):
        logger("robotgate.somewhere.new")


def test_a_record_leaves_without_the_secrets_its_arguments_and_traceback_quote(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    proxy = "http://user:CANARY-PW@127.0.0.1:3128"
    try:
        raise OSError(f"407, message='Proxy Authentication Required', url='{proxy}'")
    except OSError as exc:
        failure = exc
    # A child logger's record, as a module asking logging.getLogger for its name makes it.
    logging.getLogger("robotgate.store.sqlite").warning(
        "failed %s with %r (Authorization: Bearer CANARY-TOKEN)", proxy, failure,
        exc_info=failure)
    [record] = caplog.records
    text = logging.Formatter().format(record)
    assert "user:***@127.0.0.1:3128" in text and "OSError" in text, text
    assert "CANARY" not in text and "CANARY" not in caplog.text, text
