"""RedisStore and damaged pacing data: a fleet ``tat`` that robotgate cannot have written.

Every ``P:tat:{G}`` robotgate writes expires one second after its slot, so a
future tat without an expiry, or beyond it, is damage: the store names the key
rather than hold the group for as long as the value says (a tat of 1e16 µs
would be centuries).  Runs on the session's redis-server and on its cluster.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from robotgate.store.base import StoreError
from robotgate.store.redis import RedisStore

GROUP = "host:damaged.example"


@pytest.fixture(params=["server", "cluster"])
def url_cluster(request: pytest.FixtureRequest) -> tuple[str, bool]:
    cluster = request.param == "cluster"
    return request.getfixturevalue("redis_cluster" if cluster else "redis_url"), cluster


@pytest.fixture
async def raw(url_cluster: tuple[str, bool]) -> AsyncIterator[Any]:
    url, cluster = url_cluster
    client: Any = (RedisCluster if cluster else aioredis.Redis).from_url(url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def store(url_cluster: tuple[str, bool], prefix: str) -> AsyncIterator[RedisStore]:
    url, cluster = url_cluster
    async with RedisStore(url, prefix=prefix, cluster=cluster, unavailable_timeout=2) as handle:
        yield handle


def tat_key(prefix: str) -> str:
    return f"{prefix}:tat:{{{GROUP}}}"


def now_us() -> int:
    return int(time.time() * 1_000_000)


@pytest.mark.slow
@pytest.mark.parametrize("far", [1e16, 1e17, "in a year"])
async def test_far_future_tat_without_expiry_is_damage(
    store: RedisStore, raw: Any, prefix: str, far: float | str
) -> None:
    ahead = now_us() + 365 * 86_400 * 1_000_000 if far == "in a year" else far
    await raw.set(tat_key(prefix), f"{ahead:.0f}")
    calls = (lambda: store.reserve(GROUP, 0.1), lambda: store.pause(GROUP, time.time() + 1))
    for call in calls:
        with pytest.raises(StoreError, match="pacing time beyond its expiry") as caught:
            await call()
        assert repr(tat_key(prefix)) in str(caught.value)
        assert repr(prefix) in str(caught.value)


@pytest.mark.slow
async def test_tat_beyond_its_own_expiry_is_damage(
    store: RedisStore, raw: Any, prefix: str
) -> None:
    await store.reserve(GROUP, 0.1)
    # The value moved far ahead, the expiry robotgate gave it kept.
    await raw.set(tat_key(prefix), f"{now_us() + 3_600_000_000:.0f}", keepttl=True)
    with pytest.raises(StoreError, match="beyond its expiry"):
        await store.reserve(GROUP, 0.1)


@pytest.mark.slow
async def test_past_tat_without_expiry_is_harmless(
    store: RedisStore, raw: Any, prefix: str
) -> None:
    await raw.set(tat_key(prefix), "5")
    assert await store.reserve(GROUP, 0.1) == 0
    assert 0 < await raw.pttl(tat_key(prefix)) <= 1_100


async def test_long_waits_robotgate_wrote_are_kept(store: RedisStore) -> None:
    # An hour's interval, an hour's pause: read back as they were written (the slots
    # after them are beyond the horizon: not granted, and due when written).
    first = await store.reserve_slot(GROUP, 3600)
    assert first.granted and first.wait == 0
    later = await store.reserve_slot(GROUP, 3600)
    assert not later.granted and later.start_us - first.start_us == 3_600_000_000
    other = "host:paused.example"
    await store.pause(other, time.time() + 7200)
    paused = await store.reserve_slot(other, 0.1)
    assert not paused.granted and paused.wait == pytest.approx(7200 - 6, abs=1)
    assert (await store.reserve_slot(other, 0.1)).start_us == paused.start_us
