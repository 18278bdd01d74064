"""Writes robots entries and host states to a SQLite store in batches, reporting each batch
only after it has been flushed (tests/store/test_sqlite_store.py kills it mid-way).

    python tests/support/children/sqlite_writer.py PATH TAG BATCHES PER_BATCH
"""

from __future__ import annotations

import asyncio
import sys
import time

from robotgate.store.base import HostState, RobotsEntry
from robotgate.store.sqlite import SQLiteStore


async def main(path: str, tag: str, batches: int, per_batch: int) -> None:
    store = SQLiteStore(path, flush_interval=60, flush_batch=10_000)
    await store.open()
    print("open", flush=True)
    deadline = time.monotonic() + 30
    for b in range(batches):
        for i in range(per_batch):
            origin = f"https://{tag}-{b}-{i}.example"
            now = time.time()
            await store.save_robots(
                RobotsEntry(origin, "ok", now, now + 3600, 200, origin.encode() * 20)
            )
            await store.save_host(HostState(origin, visits=b + 1, last_visit=now))
        await store.flush()
        print(f"flushed {b}", flush=True)
        if time.monotonic() > deadline:
            break
    await store.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
