"""The gate's close with a store that cannot save, and what its crawl logs of a URL
with user information (issue 53 §4)."""

from __future__ import annotations

import logging

import pytest
from aiohttp import ClientResponse

from robotgate import MemoryStore, RobotGate
from robotgate.store.base import StoreError
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0 (+https://example.com/bot)"


class _FullDisk(MemoryStore):
    async def close(self) -> None:
        raise StoreError("cannot write host state: database or disk is full")


async def test_close_with_a_store_that_cannot_save_reports_and_does_not_raise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="robotgate")
    async with BenchServer([HostPlan("allow")]) as srv:
        gate = RobotGate(AGENT, delay=0, store=_FullDisk())
        # __aexit__ closes: nothing raised
        async with gate, gate.fetch(srv.url(0, "/page/1")) as resp:
            assert resp.status == 200
    assert gate.close_error is not None and "database or disk is full" in gate.close_error
    assert gate.stats["store_errors"] == 1
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("could not save its last writes on close" in m for m in warned)
    await gate.close()  # again: the same answer, still nothing raised
    assert gate.stats["store_errors"] == 1


async def test_a_closed_gate_with_a_good_store_has_no_close_error() -> None:
    gate = RobotGate(AGENT, delay=0)
    async with gate:
        pass
    assert gate.close_error is None and gate.stats["store_errors"] == 0


@pytest.mark.parametrize("userinfo", ["robot:s3cr3t-pw", "s3cr3t-pw"])
async def test_crawl_logs_no_password_or_token(
    userinfo: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="robotgate")

    async def handler(url: str, resp: ClientResponse) -> None:
        raise ValueError(f"cannot parse {url}")  # the error quotes the URL as given

    async with BenchServer([HostPlan("allow")]) as srv:
        url = srv.url(0, "/page/1").replace("://", f"://{userinfo}@", 1)
        async with RobotGate(AGENT, delay=0) as gate:
            summary = await gate.crawl([url], handler)
    assert summary.errors == 1
    logged = [r.getMessage() for r in caplog.records]
    assert any("cannot parse" in m and "***@" in m for m in logged), logged
    assert not any("s3cr3t-pw" in m for m in logged)
