"""A reply lost at each step of a robots.txt fetch's calls to Redis: the store sends the
request again (alone, or the whole 10 ms batch of looks and saves with the host states
that ride along), so every script such a request carries must be idempotent for the
same caller.  The caller gets its lock's token, its entry and host state are stored, and
no lock is left held."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from robotgate.records import HostState, Outcome, RobotsEntry
from robotgate.store.redis import RedisStore, scripts
from tests.support.lossy_redis import LossyRedis

pytestmark = pytest.mark.slow

ORIGIN = "https://lost-reply.example"

# The scripts a fetch's calls carry, in the order they go: the first look (batched), a
# renewal, the look just before the request leaves, the save that ends the lock
# (batched, with the host states along), and, for a fetch that ends without a save,
# the unlock.
STEPS = {
    "LOAD_OR_LOCK": scripts.LOAD_OR_LOCK,
    "RENEW": scripts.RENEW,
    "LOCK_LOAD": scripts.LOCK_LOAD,
    "SAVE_UNLOCK": scripts.SAVE_UNLOCK,
    "FLUSH_HOSTS": scripts.FLUSH_HOSTS,
    "UNLOCK": scripts.UNLOCK,
}


def entry(origin: str) -> RobotsEntry:
    now = time.time()
    return RobotsEntry(origin, Outcome.OK, now, now + 3600, 200,
                       b"User-agent: *\nDisallow: /x\n", good_at=now)


@pytest.fixture
async def lossy(redis_url: str) -> AsyncIterator[LossyRedis]:
    client = LossyRedis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.mark.parametrize("step", list(STEPS))
async def test_a_fetch_survives_a_lost_reply_at_each_step(
    step: str, lossy: LossyRedis, redis_url: str, prefix: str
) -> None:
    lossy.lose(STEPS[step].sha)
    async with RedisStore(prefix=prefix, client=lossy) as store, \
            RedisStore(redis_url, prefix=prefix) as other:
        found, token = await store.load_or_lock(ORIGIN, 30)
        assert found is None
        assert token is not None, "the caller's own lock, taken by the lost reply's request"
        assert await other.lock_fetch(ORIGIN, 30) is None  # held, by the caller
        assert await store.renew_fetch(ORIGIN, token, 30) is True
        held, again = await store.confirm_fetch(ORIGIN, token, 30)
        assert held and again is None
        await store.save_host(HostState(ORIGIN, visits=3))  # goes along with the save
        assert await store.save_robots_unlock(entry(ORIGIN), token) is True
        saved = await other.load_robots(ORIGIN)
        assert saved is not None and saved.body == entry(ORIGIN).body
        await store.flush()
        assert (await other.load_host(ORIGIN)) == HostState(ORIGIN, visits=3)
        # No lock left: another worker takes it at once.
        again_token = await other.lock_fetch(ORIGIN, 30)
        assert again_token is not None
        await other.unlock_fetch(ORIGIN, again_token)

        # A fetch that ends without a save lets its lock go.
        second = ORIGIN + ":8443"
        taken, _ = await store.lock_load(second, 30)
        assert taken is not None
        await store.unlock_fetch(second, taken)
        assert await other.lock_fetch(second, 30) is not None
    assert lossy.lost == {STEPS[step].sha: 1}, "the reply meant to be lost was lost"
