"""Run inside a network namespace of its own (``unshare -rn``): loopback up, IPv6
disabled (Docker's default), then ask the gate about a site whose name resolves to
``::1`` only, and fetch from one that resolves to ``::1`` and ``127.0.0.1``.  Prints
what it saw as JSON."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from robotgate import LocalFailure, RobotGate
from robotgate.events import Event, LocalShortage

NAMES = {"v6only.test": ["::1"], "dual.test": ["::1", "127.0.0.1"]}


class Names(aiohttp.abc.AbstractResolver):
    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        return [{"hostname": host, "host": address, "port": port,
                 "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                 "proto": 0, "flags": 0} for address in NAMES[host]]

    async def close(self) -> None:
        pass


def without_ipv6() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for interface in ("all", "default", "lo"):
        Path(f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6").write_text("1\n")


async def main() -> None:
    app = web.Application()
    app.router.add_get("/robots.txt",
                       lambda _: web.Response(text="User-agent: *\nDisallow: /private\n"))
    app.router.add_get("/page", lambda _: web.Response(text="page"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    aiohttp.DefaultResolver = lambda *a, **k: Names()  # type: ignore[misc, assignment]
    heard: list[Event] = []
    seen: dict[str, Any] = {}
    try:
        async with RobotGate("NoRouteBot/1.0", delay=0, is_private=lambda _: False,
                             on_event=heard.append) as gate:
            origin = f"http://v6only.test:{port}"
            try:
                decision = await asyncio.wait_for(gate.decide(f"{origin}/page"), 60)
            except LocalFailure as exc:  # hang guard above: the old retries last 30 s
                seen["local_failure"] = str(exc)
            else:
                seen["allowed"] = decision.allowed
                seen["outcome"] = str(decision.outcome)
                seen["reason"] = decision.reason
            entry = await gate.store.load_robots(origin)
            seen["cached"] = None if entry is None else [str(entry.outcome), entry.detail]
            seen["shortages"] = sum(isinstance(e, LocalShortage) for e in heard)
            async with gate.fetch(f"http://dual.test:{port}/page") as resp:
                seen["dual"] = [resp.status, await resp.text()]
    finally:
        await runner.cleanup()
    print(json.dumps(seen))


if __name__ == "__main__":
    without_ipv6()
    sys.exit(asyncio.run(main()))
