"""A store in Redis or Redis Cluster, shared by a fleet of crawler workers.

One ``RedisStore`` per worker process, all pointing at the same Redis (or
cluster) and prefix, gives the fleet one robots.txt cache, one fetch per
origin at a time and one pacing schedule per politeness group:

>>> store = RedisStore("redis://cache.internal:6379/0", prefix="crawl")  # doctest: +SKIP
>>> store = RedisStore("redis://node1.internal:7000", prefix="c", cluster=True)  # doctest: +SKIP
>>> gate = RobotGate("MyBot/1.0", store=store)  # doctest: +SKIP

Keys (``P`` is the prefix, ``O`` the origin as the gate spells it, ``G`` the
politeness-group key the gate paces by, e.g. ``host:example.com``; ``{O}``
and ``{G}`` are Redis Cluster hash tags, so every key one script touches
lives in one slot):

``P:meta``
    String ``robotgate/<format>``; checked when the store opens, created if
    missing.  A prefix in another format is refused, naming the remedy.
``P:robots:{O}``
    Hash: ``h`` = compact JSON header (every field but origin and body),
    ``b`` = the raw body bytes (absent when the body is ``None``).  Expires
    ``keep_stale`` seconds after the entry stops being fresh (or after it was
    saved, if it was stale already), so a stale copy stays usable for RFC 9309
    section 2.3.1.4 while abandoned origins go away.
``P:lock:{O}``
    String: the token of the worker fetching O's robots.txt, with a PX expiry.
``P:done:{O}``
    Channel: ``saved`` after an entry is stored, ``released`` after a lock is
    released (``PUBLISH``; ``SPUBLISH``, sharded, on a cluster, and only when
    another worker waits: see ``P:wait:{O}``).
``P:wait:{O}``
    String ``1`` (cluster only): set by a look of a worker waiting for O's
    fetch while the fetch is under way (or nothing is stored), for the lock's
    time left plus 10 s; the save or release that ends the fetch deletes it
    and publishes only if it was there.
``P:host:{G}``
    Hash: ``v`` visits, ``lv`` last visit, ``na`` next allowed, ``vc`` visits
    since check; numbers as decimal strings (floats as ``repr``, so they round
    trip exactly).  Expires ``host_ttl`` seconds after the last write (plus
    any pause still running).
``P:tat:{G}``
    String: the GCRA "theoretical arrival time", integer microseconds on the
    Redis server's clock; expires shortly after that time has passed (an
    expired key and a past time mean the same thing).

Anything else found under those names (wrong type, unparseable value, unknown
format) raises :class:`StoreError` naming the key and the prefix.

Faults: every call retries "unreachable" (connection errors, timeouts, a
failover, a cluster slot without a master) with jittered back-off for up to
``unavailable_timeout`` seconds, then raises :class:`StoreError`.  Nothing
ever returns a default that would let a request through, and the client
reconnects (and re-reads the cluster layout) by itself once Redis is back.

How a worker uses the store's fleet part (the store itself) for one origin (``G`` its group key)::

    entry = await store.load_robots(origin)                 # 1 round trip
    if entry is None or not entry.is_fresh(time.time()):
        token = await store.lock_fetch(origin, ttl)         # ttl > fetch timeout
        if token is not None:
            try:
                ...fetch, then await store.save_robots(new_entry)
            finally:
                await store.unlock_fetch(origin, token)
        else:
            entry = await store.wait_robots(origin, ttl)    # None: try the lock again
    await asyncio.sleep(await store.reserve(G, interval))   # 1 round trip
    ...send the request; on Retry-After: await store.pause(G, until)

Pacing lives in Redis: if Redis loses its data (a restart without
persistence, eviction, a failover that loses the last writes of the old
master), slots granted before the loss may overlap new ones by at most the
longest wait already handed out; run Redis with persistence and
``maxmemory-policy noeviction`` where that matters.
"""

from __future__ import annotations

try:
    import redis.asyncio  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "RedisStore needs the redis package (redis-py 5 or newer):"
        " pip install 'robotgate[redis]'"
    ) from _exc

from .codec import FORMAT_VERSION
from .store import RedisStore, Slot

__all__ = ["FORMAT_VERSION", "RedisStore", "Slot"]
