"""Opens and closes a new SQLiteStore for each path read from stdin, answering each with a
JSON line of the warnings the store logged (tests/store/test_sqlite_first_open.py runs two
of these on the same paths at the same moment).

    python tests/support/children/sqlite_opener.py   (then one path per line; "ready" first)
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys

from robotgate.store.sqlite import SQLiteStore


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def main() -> None:
    kept = Kept()
    logging.getLogger("robotgate").addHandler(kept)
    print("ready", flush=True)
    for line in sys.stdin:
        kept.messages.clear()
        error = None
        try:
            async with SQLiteStore(line.strip()):
                pass
        except Exception as exc:  # told to the test, which fails on it
            error = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"warnings": kept.messages, "error": error}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
