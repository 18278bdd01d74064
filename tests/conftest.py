"""Shared fixtures: a real redis-server and a real Redis Cluster for the Redis store tests."""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.redis_server import MISSING_REASON, LocalCluster, RedisServer, find_redis_server

#: ``host:port`` (or a URL) of any node of a Redis Cluster to test against
#: instead of starting one; the tests only ever touch keys under their own prefix.
CLUSTER_ENV = "ROBOTGATE_TEST_REDIS_CLUSTER"


def pytest_report_header(config: pytest.Config) -> str:
    binary = find_redis_server()
    if binary is None:
        return f"redis-server: none, Redis tests will skip ({MISSING_REASON})"
    try:
        version = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        version = f"version unknown ({exc})"
    cluster = os.environ.get(CLUSTER_ENV)
    where = f"cluster at {cluster}" if cluster else "cluster started per session"
    return f"redis-server: {binary} ({version}); {where}"


#: A client a test may need -> the module it needs and the extra that installs it.  A test
#: needs it when its ``driver`` or ``path`` parameter is the client's name (the contract
#: tests' client paths; "browser" is Playwright's) or, in tests/contract and
#: tests/integrations, when its own name or its module's has the client's (``test_scrapy_...``).
CLIENTS = {
    "scrapy": ("scrapy", "Scrapy", "scrapy"),
    "httpx": ("httpx", "httpx", "httpx"),
    "crawlee": ("crawlee", "crawlee", "crawlee"),
    "playwright": ("playwright", "Playwright", "playwright"),
    "browser": ("playwright", "Playwright", "playwright"),
    "crawl4ai": ("crawl4ai", "crawl4ai", "crawl4ai"),
}


#: A file to which a run adds the node id of each test (or module) it skips, but for soaks:
#: CI sets it for the README's run, and runs with every client each of them that its
#: every-client run (--clients-only, chosen before the README's run ends) did not.
SKIPPED_TO_ENV = "ROBOTGATE_SKIPPED_TO"
#: A file to which a --clients-only run writes the node ids it selected.
SELECTED_TO_ENV = "ROBOTGATE_SELECTED_TO"


def _needs(item: pytest.Item) -> set[str]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    named = {params.get(argument) for argument in ("driver", "path")}
    # By name only among the clients' own tests: elsewhere a name may speak of a client
    # without needing it (the Scrapy settings' store text, say).
    where = item.path.parent.name
    names = (f"_{item.path.stem}_{getattr(item, 'originalname', item.name)}_"
             if where in ("contract", "integrations") else "")
    return {client for client in CLIENTS
            if client in named or (client != "browser" and f"_{client}_" in names)}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak", action="store_true",
                     help="run the soaks too (tests marked soak; CI runs them every time)")
    parser.addoption("--clients-only", action="store_true",
                     help="only the tests a missing client may skip (CI's every-client run)")


@functools.cache
def _asking_for_modules(path: Path) -> tuple[bool, frozenset[str]]:
    """Where the test module at ``path`` calls ``pytest.importorskip``: outside its tests'
    own bodies (at import, or in a helper: any of its tests may skip), and the names of
    the tests that call it themselves."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def asks(node: ast.AST, skip: set[int]) -> bool:
        stack = [node]
        while stack:
            here = stack.pop()
            if id(here) in skip:
                continue
            if isinstance(here, ast.Attribute) and here.attr == "importorskip":
                return True
            stack.extend(ast.iter_child_nodes(here))
        return False

    tests = [node for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             and node.name.startswith("test_")]
    outside = asks(tree, {id(test) for test in tests})
    return outside, frozenset(test.name for test in tests if asks(test, set()))


def _may_skip_for_a_client(item: pytest.Item) -> bool:
    """A test the core's test extra may skip for a client it lacks: one that needs a
    client (``_needs``) or asks for a module with ``pytest.importorskip``."""
    if _needs(item):
        return True
    outside, asking = _asking_for_modules(item.path)
    return outside or getattr(item, "originalname", item.name) in asking


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test of a client that is not installed skips, naming the extra, so that the core's
    test extra runs every other client path of the same contract test; a soak skips
    without --soak, saying so."""
    missing = {client: pytest.mark.skip(
                   reason=f"{name} is not installed: pip install 'robotgate[{extra}]'")
               for client, (module, name, extra) in CLIENTS.items()
               if importlib.util.find_spec(module) is None}
    soak = None if config.getoption("--soak") else pytest.mark.skip(
        reason="a soak: run with --soak (CI runs every soak on every run)")
    if config.getoption("--clients-only"):
        kept = [item for item in items if _may_skip_for_a_client(item)]
        left = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in left])
        items[:] = kept
        where = os.environ.get(SELECTED_TO_ENV)
        if where:
            Path(where).write_text("".join(f"{item.nodeid}\n" for item in kept),
                                   encoding="utf-8")
    for item in items:
        if soak is not None and item.get_closest_marker("soak") is not None:
            item.add_marker(soak)
            continue
        for client in sorted(_needs(item) & missing.keys()):
            item.add_marker(missing[client])
            break


def _note_skipped(report: pytest.CollectReport | pytest.TestReport) -> None:
    where = os.environ.get(SKIPPED_TO_ENV)
    if not where or not report.skipped or hasattr(report, "wasxfail"):
        return
    if "soak" in getattr(report, "keywords", {}):
        return
    with open(where, "a", encoding="utf-8") as skipped:
        skipped.write(report.nodeid + "\n")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_skipped(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_skipped(report)


def _need_redis_server() -> None:
    if find_redis_server() is None:
        print(f"\nskipping Redis tests: {MISSING_REASON}", file=sys.stderr)
        pytest.skip(MISSING_REASON)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, which it may stop and restart (empty: data is
    kept in memory only).  Skips (saying why) when no redis-server binary is found."""
    _need_redis_server()
    directory = tmp_path / "redis"
    directory.mkdir()
    with RedisServer.start(directory) as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a redis-server started for this test session on a free loopback port.

    Tests share it, so each must use its own key prefix.  Skips (saying why)
    only when no redis-server binary can be found.
    """
    _need_redis_server()
    server = RedisServer.start(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one node of a 3-master Redis Cluster on loopback.

    ``$ROBOTGATE_TEST_REDIS_CLUSTER`` names a running one; otherwise one is
    started for the session (three ``redis-server --cluster-enabled yes``).
    Tests share it, so each must use its own key prefix.
    """
    given = os.environ.get(CLUSTER_ENV)
    if given:
        yield given if "://" in given else f"redis://{given}/0"
        return
    _need_redis_server()
    cluster = LocalCluster.start(tmp_path_factory.mktemp("redis-cluster"), masters=3)
    try:
        yield cluster.url
    finally:
        cluster.close()


@pytest.fixture
def prefix() -> str:
    """A key prefix of its own for each test on the shared servers."""
    return f"rgtest:{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[Any]:
    """A plain Redis client, as another application would use the server."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def raw_cluster(redis_cluster: str) -> AsyncIterator[Any]:
    """A plain cluster client on the session's Redis Cluster."""
    from redis.asyncio.cluster import RedisCluster

    client = RedisCluster.from_url(redis_cluster)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture(scope="session", autouse=True)
def crawl4ai_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """crawl4ai (under robotgate.integrations.crawl4ai) writes its cache and logs below
    $CRAWL4_AI_BASE_DIRECTORY, else $HOME, from its import on: a session keeps them in
    its temporary directory (and crawl4ai's banners off the output)."""
    home = tmp_path_factory.mktemp("crawl4ai")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CRAWL4_AI_BASE_DIRECTORY", str(home))
        patch.setenv("CRAWL4AI_NO_CLOUD_NOTICE", "1")
        yield home
