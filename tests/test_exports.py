"""The public names of ``robotgate``: adding or removing one is a decision, made here."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import robotgate

PUBLIC = {
    "BodyTooLarge",
    "CrawlInUse",
    "CrawlResult",
    "CrawlSummary",
    "Decision",
    "Disallowed",
    "Error",
    "FetchPolicy",
    "GateClosed",
    "Handled",
    "HostSettings",
    "HostState",
    "InvalidURL",
    "LocalFailure",
    "MemoryStore",
    "Network",
    "Outcome",
    "Pacing",
    "PageDirectives",
    "PrivatePartMissing",
    "ProxyFailed",
    "RedisStore",
    "RequestRate",
    "RobotGate",
    "RobotsEntry",
    "RobotsTxt",
    "Rule",
    "SQLiteStore",
    "SitemapEntry",
    "Store",
    "StoreError",
    "TooManyRedirects",
    "UsageRule",
    "WaitsOnItself",
    "page_directives",
    "page_links",
}


def test_the_public_names_are_exactly_these() -> None:
    assert set(robotgate.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(robotgate, name) is not None


def test_no_shim_modules_remain() -> None:
    for old in ("robotgate.classic", "robotgate.patterns", "robotgate.robotstxt"):
        try:
            importlib.import_module(old)
        except ModuleNotFoundError:
            continue
        raise AssertionError(f"{old} still imports")


def test_the_version_comes_from_the_package_metadata() -> None:
    from importlib import metadata

    assert robotgate.__version__ == metadata.version("robotgate")


@pytest.mark.slow
def test_the_cli_version_names_the_build() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "robotgate", "--version"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    assert robotgate.__version__ in out
    assert "pure Python" in out or "compiled" in out


def test_every_exported_exception_derives_from_robotgate_error() -> None:
    exceptions = {name: value for name in robotgate.__all__
                  if isinstance(value := getattr(robotgate, name), type)
                  and issubclass(value, BaseException)}
    assert {"BodyTooLarge", "CrawlInUse", "Disallowed", "Error", "GateClosed", "InvalidURL",
            "LocalFailure", "PrivatePartMissing", "StoreError"} <= set(exceptions)
    for name, cls in exceptions.items():
        assert issubclass(cls, robotgate.Error), name
    # The built-in bases users' except clauses were written for stay.
    assert issubclass(robotgate.InvalidURL, ValueError)
    assert issubclass(robotgate.BodyTooLarge, ValueError)
    assert issubclass(robotgate.GateClosed, RuntimeError)
    assert issubclass(robotgate.StoreError, RuntimeError)


def test_every_exception_class_robotgate_defines_derives_from_robotgate_error() -> None:
    # Public or not, whatever robotgate may raise is a robotgate.Error; the CLI's own
    # errors end as exit codes and messages, and _private ones never leave their module.
    not_rooted = []
    for module_info in pkgutil.walk_packages(robotgate.__path__, "robotgate."):
        if module_info.name.endswith("__main__") or module_info.name.startswith("robotgate.cli"):
            continue
        try:
            module = importlib.import_module(module_info.name)
        except ImportError:  # an extra's client is not installed (the error names the extra)
            continue
        for name, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__ and not name.startswith("_")
                    and not issubclass(value, robotgate.Error)):
                not_rooted.append(f"{module.__name__}.{name}")
    assert not_rooted == []


def test_a_structured_field_that_does_not_parse_is_a_robotgate_error() -> None:
    from robotgate.robots.usage import StructuredFieldError, parse_dictionary

    with pytest.raises(StructuredFieldError, match="a trailing comma") as caught:
        parse_dictionary("a=1,")
    assert isinstance(caught.value, robotgate.Error) and isinstance(caught.value, ValueError)


async def test_a_fetch_read_as_its_response_says_to_await_it() -> None:
    async with robotgate.RobotGate("ExportsBot/1.0") as gate:
        call = gate.fetch("http://127.0.0.1:9/never-sent")
        with pytest.raises(AttributeError, match=r"has no attribute 'status': gate.fetch\(url\)"
                           r" is not the response yet; use 'async with gate.fetch\(url\) as"
                           r" resp:' or 'resp = await gate.fetch\(url\)'"):
            call.status  # type: ignore[attr-defined]  # noqa: B018
        assert not hasattr(call, "_missing") and call.sent is None
