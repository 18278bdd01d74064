"""A long robots.txt is parsed and compiled in a worker thread (``parsed_aside``): the
event loop runs meanwhile, in the compiled build too.

The interpreter hands the GIL to a waiting thread every 5 ms; mypyc's compiled code
never does, so the parse and the compiling of a large group pause between their steps
(robotgate.robots.pause).  CI runs this file against the compiled wheel as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from robotgate.policy.site import Interpretation
from robotgate.politeness.robots_cache import parsed_aside
from robotgate.records import Outcome, RobotsEntry

#: A body at the read limit (500 KiB): one group of about 40,000 rules, a third wildcards.
LINES = ["User-agent: *"] + [f"Disallow: /p{i}/*x$" if i % 3 == 0 else f"Allow: /a{i}/b"
                             for i in range(40_000)]
BODY = "\n".join(LINES).encode()[: 500 * 1024]


async def test_the_loop_runs_while_a_long_robots_txt_is_parsed_aside() -> None:
    entry = RobotsEntry("http://127.0.0.1:1", Outcome.OK, time.time(), time.time() + 60,
                        status=200, body=BODY)
    how = Interpretation("bot")
    beats = 0
    seen: list[int] = []

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            await asyncio.sleep(0.001)

    def aside() -> None:
        seen.append(beats)
        rules = parsed_aside(entry, how)
        seen.append(beats)
        assert not rules.allowed("/p0/ax", "bot") and rules.allowed("/a1/b", "bot")

    beating = asyncio.create_task(heartbeat())
    try:
        await asyncio.sleep(0.01)
        await asyncio.to_thread(aside)
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
    # Held for the whole parse and compile, the loop would beat at most as the thread's
    # interpreted code starts and ends it; it beat between the steps too.
    assert seen[1] - seen[0] >= 3, seen
