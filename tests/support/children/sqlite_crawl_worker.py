"""One of two processes crawling through one SQLite file (tests/store/test_persistence.py):
fetches every URL through a gate on the store and prints the gate's stats as JSON.

    python tests/support/children/sqlite_crawl_worker.py PATH URL...
"""

from __future__ import annotations

import asyncio
import json
import sys

from robotgate import RobotGate, SQLiteStore


async def main(path: str, urls: list[str]) -> None:
    store = SQLiteStore(path, flush_interval=0.05)
    async with RobotGate("TestBot/1.0", delay=0, store=store) as gate:

        async def one(url: str) -> None:
            resp = await gate.fetch(url)
            if resp.status != 200:
                raise SystemExit(f"{url}: {resp.status}")

        await asyncio.gather(*(one(u) for u in urls))
        print(json.dumps(gate.stats), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
