"""The Redis link's bounds: a call, and a close, end even when redis-py never does.

No server needed: the client is a stand-in and the attempts are coroutines
that hang the way redis-py can (a lock or a socket close with no timer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from robotgate.store.base import StoreError
from robotgate.store.redis import link, notify
from robotgate.store.redis.link import Link
from tests.support.waits import assert_cut_off


def make_link(unavailable_timeout: float) -> Link:
    return Link("redis://127.0.0.1:1", cluster=False, client=object(),  # type: ignore[arg-type]
                unavailable_timeout=unavailable_timeout, max_connections=4, label="test",
                map_error=lambda exc, keys: StoreError(str(exc)))


def stubborn(release: asyncio.Event) -> Callable[[], Coroutine[Any, Any, None]]:
    """A coroutine that shrugs off cancellation until ``release`` is set."""

    async def run() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
    return run


async def test_a_cancellation_the_client_swallowed_still_ends_the_call() -> None:
    started = asyncio.Event()

    async def attempt(client: object) -> str:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:  # as redis-py can, when a read completes meanwhile
            return "answered"
        return "slept"

    call = asyncio.ensure_future(make_link(5).call(attempt, ["k"]))
    await started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 2)


@pytest.mark.slow
async def test_a_call_whose_attempt_never_answers_fails_closed() -> None:
    never = asyncio.Event()
    tries = 0

    async def attempt(client: object) -> None:
        nonlocal tries
        tries += 1
        await never.wait()  # no timer: only the link's bound ends it

    # The first try is cut off at the deadline plus two socket timeouts (0.5 s each).
    with pytest.raises(StoreError, match="unreachable for"):
        await asyncio.wait_for(make_link(0.2).call(attempt, ["k"]), 10)
    assert tries == 1


@pytest.mark.slow
async def test_a_best_effort_try_that_never_answers_ends() -> None:
    never = asyncio.Event()

    async def attempt(client: object) -> None:
        await never.wait()

    await assert_cut_off(make_link(0.2).once(attempt), within=10)


async def test_a_call_still_retries_within_its_time() -> None:
    tries = 0

    async def attempt(client: object) -> str:
        nonlocal tries
        tries += 1
        if tries < 3:
            raise ConnectionError("refused")
        return "answer"

    assert await make_link(5).call(attempt, ["k"]) == "answer"
    assert tries == 3


async def test_within_leaves_a_close_that_never_ends() -> None:
    release = asyncio.Event()
    task = asyncio.ensure_future(stubborn(release)())
    try:
        await asyncio.wait_for(link.within(task, 0.1), 5)
        assert not task.done()
    finally:
        release.set()
        await task


async def test_within_passes_on_the_error_of_a_close_that_ends() -> None:
    async def fails() -> None:
        raise OSError("reset")

    with pytest.raises(OSError, match="reset"):
        await link.within(fails(), 1)


async def test_stopping_a_subscriber_that_ignores_cancellation_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "CLOSE_WAIT", 0.1)
    release = asyncio.Event()
    task = asyncio.get_running_loop().create_task(stubborn(release)())
    await asyncio.sleep(0)
    try:
        await asyncio.wait_for(notify._stop(task), 5)
        assert not task.done()
    finally:
        release.set()
        await task


async def test_a_lost_cancellation_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify, "CLOSE_WAIT", 0.1)

    async def loses_one() -> None:
        with contextlib.suppress(asyncio.CancelledError):  # lost, as inside redis-py
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)

    task = asyncio.get_running_loop().create_task(loses_one())
    await asyncio.sleep(0)
    await asyncio.wait_for(notify._stop(task), 5)
    assert task.cancelled()
