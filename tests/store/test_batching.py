"""HostBatcher (store/batching.py): failed writes keep their states and warn once per run."""

from __future__ import annotations

import asyncio
import logging

import pytest

from robotgate.records import HostState
from robotgate.store.batching import HostBatcher


async def test_a_run_of_failed_writes_warns_once_and_keeps_the_states(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")
    written: list[list[str]] = []
    full = [True]

    async def write(states: list[HostState]) -> None:
        if full[0]:
            raise OSError(28, "No space left on device")
        written.append([s.origin for s in states])

    batcher = HostBatcher(write, interval=0, batch=100, label="full.db")

    async def timed_flush(origin: str) -> None:
        await batcher.save(HostState(origin))
        for _ in range(5):
            await asyncio.sleep(0)  # the timer's flush runs

    for i in range(4):
        await timed_flush(f"host:{i}")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "full.db failed" in warnings[0].getMessage()
    assert len(batcher) == 4  # nothing lost
    full[0] = False
    await timed_flush("host:4")
    assert sorted(written[0]) == [f"host:{i}" for i in range(5)]
    full[0] = True
    await timed_flush("host:5")  # a new run of failures: warned again
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


async def test_close_waits_for_a_timed_write_under_way_and_writes_what_it_failed() -> None:
    gate = asyncio.Event()
    attempts: list[list[str]] = []

    async def write(states: list[HostState]) -> None:
        attempts.append([s.origin for s in states])
        if len(attempts) == 1:
            await gate.wait()  # the first write hangs on a lock, then fails
            raise OSError("database is locked")

    batcher = HostBatcher(write, interval=0, batch=100, label="locked.db")
    await batcher.save(HostState("host:a"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert attempts == [["host:a"]]  # the timed write is under way
    closing = asyncio.ensure_future(batcher.close())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not closing.done()  # close() waits for it
    gate.set()
    await asyncio.wait_for(closing, 5)
    assert attempts == [["host:a"], ["host:a"]] and len(batcher) == 0


async def test_a_write_of_the_stores_own_carries_the_pending_states_in_order() -> None:
    timed: list[list[str]] = []
    gate = asyncio.Event()

    async def write(states: list[HostState]) -> None:
        timed.append([s.origin for s in states])
        await gate.wait()

    batcher = HostBatcher(write, interval=60.0, batch=100, label="own.db")
    carried: list[list[str]] = []

    async def send(states: list[HostState]) -> tuple[str, BaseException | None]:
        carried.append([s.origin for s in states])
        return "reply", None

    await batcher.save(HostState("host:a"))
    assert await batcher.write_along(send) == "reply"
    assert carried == [["host:a"]] and len(batcher) == 0 and batcher.get("host:a") is None
    # While a batch is being written, another carries none: batches leave in order.
    await batcher.save(HostState("host:b"))
    flushing = asyncio.ensure_future(batcher.flush())
    for _ in range(5):
        await asyncio.sleep(0)
    assert timed == [["host:b"]]
    await batcher.save(HostState("host:c"))
    assert await batcher.write_along(send) == "reply"
    assert carried[-1] == [] and len(batcher) == 1
    gate.set()
    await flushing  # and host:c with it
    assert timed == [["host:b"], ["host:c"]]
    await batcher.close()


async def test_a_failed_write_of_the_stores_own_puts_the_states_back() -> None:
    async def write(states: list[HostState]) -> None:
        return None

    batcher = HostBatcher(write, interval=60.0, batch=100, label="own.db")

    async def send(states: list[HostState]) -> tuple[str, BaseException | None]:
        raise OSError("unreachable")

    await batcher.save(HostState("host:a", visits=2))
    with pytest.raises(OSError):
        await batcher.write_along(send)
    assert len(batcher) == 1 and batcher.get("host:a") == HostState("host:a", visits=2)
    await batcher.close()
