"""Shared fixtures: a real redis-server for the Redis store tests."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.support.redis_server import MISSING_REASON, RedisServer, find_redis_server


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
    return f"redis-server: {binary} ({version})"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a redis-server started for this test session on a free loopback port.

    Tests share it, so each must use its own key prefix.  Skips (saying why)
    only when no redis-server binary can be found.
    """
    if find_redis_server() is None:
        print(f"\nskipping Redis tests: {MISSING_REASON}", file=sys.stderr)
        pytest.skip(MISSING_REASON)
    server = RedisServer.start(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def prefix() -> str:
    """A key prefix of its own for each test on the shared redis-server."""
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
