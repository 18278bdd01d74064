"""The Redis link's connections under load: calls queue for one, first come first
served, however many the gate has out; a pool that stays empty says so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from robotgate.store.base import StoreError
from robotgate.store.redis.link import Link

pytestmark = pytest.mark.slow


def link_to(url: str, *, max_connections: int, unavailable_timeout: float,
            client: Any = None) -> Link:
    return Link(url, cluster=False, client=client, unavailable_timeout=unavailable_timeout,
                max_connections=max_connections, label="test",
                map_error=lambda exc, keys: StoreError(str(exc)))


async def test_many_more_calls_than_connections_all_answer(redis_url: str, prefix: str) -> None:
    # 40 calls at once, each holding its connection 0.1 s, over 3 connections (one kept
    # for the subscriber): about 2 s of queueing, four times the time Redis may be
    # unreachable.  A wait for a free connection is no sign of that.
    link = link_to(redis_url, max_connections=3, unavailable_timeout=0.5)
    out = 0
    most = 0

    async def held(client: Any) -> Any:
        nonlocal out, most
        out += 1
        most = max(most, out)
        try:
            return await client.blpop([f"{prefix}:nothing"], timeout=0.1)
        finally:
            out -= 1

    try:
        answers = await asyncio.gather(*(link.call(held, [prefix]) for _ in range(40)))
    finally:
        await link.close()
    assert answers == [None] * 40
    assert most == 2  # never more out than the pool holds, less the subscriber's


async def test_a_call_that_queued_longer_than_the_timeout_still_retries_a_failure(
        redis_url: str, prefix: str) -> None:
    # One call out at once (two connections, one kept for the subscriber): the second
    # queues 0.8 s behind the first, then its first try fails once.  Redis was reachable
    # all along but for that try: the queue is no part of the 0.5 s it may be unreachable.
    link = link_to(redis_url, max_connections=2, unavailable_timeout=0.5)
    tries = 0

    async def holding(client: Any) -> Any:
        await asyncio.sleep(0.8)
        return await client.ping()

    async def failing_once(client: Any) -> Any:
        nonlocal tries
        tries += 1
        if tries == 1:
            raise aioredis.ConnectionError("the first try's connection dropped")
        return await client.ping()

    try:
        first = asyncio.ensure_future(link.call(holding, [prefix]))
        await asyncio.sleep(0.05)  # the first has the connection
        answers = await asyncio.gather(first, link.call(failing_once, [prefix]))
    finally:
        await link.close()
    assert answers == [True, True] and tries == 2


async def test_a_pool_that_stays_in_use_elsewhere_is_named(redis_url: str, prefix: str) -> None:
    # A client given with a pool of one, whose connection something else holds.
    pool = aioredis.BlockingConnectionPool.from_url(redis_url, max_connections=1, timeout=0.1)
    client = aioredis.Redis.from_pool(pool)
    taken = await pool.get_connection()
    link = link_to(redis_url, max_connections=50, unavailable_timeout=0.3, client=client)
    try:
        with pytest.raises(StoreError) as failed:
            await link.call(lambda c: c.ping(), [prefix])
    finally:
        await pool.release(taken)
        await client.aclose()
    message = str(failed.value)
    assert "no connection to Redis at test came free" in message
    assert "all 1 of its pool were in use" in message and "max_connections" in message
    assert "unreachable" not in message  # Redis answered all along
