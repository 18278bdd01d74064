"""The progress line on stderr, ticking while a benchmark measures."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.report import machine


@dataclass
class Progress:
    """The progress line on stderr (``\\r``-updated while a ticker runs)."""

    enabled: bool = True
    phase: str = ""
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    phase_started: float = field(default_factory=time.monotonic)

    def start(self, phase: str, total: int = 0) -> None:
        self.phase, self.done, self.total = phase, 0, total
        self.phase_started = time.monotonic()
        self.show()

    def answered(self) -> None:
        """One more task answered (for :func:`testbed.crawl.drive`)."""
        self.done += 1

    def show(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        count = f" {self.done:,}/{self.total:,}" if self.total else ""
        line = (f"[{now - self.started:6.1f}s] {self.phase}{count} "
                f"({now - self.phase_started:.1f}s)")
        sys.stderr.write("\r" + line[:110].ljust(110))
        sys.stderr.flush()

    def clear(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()

    async def tick(self) -> None:
        while True:
            self.show()
            await asyncio.sleep(0.25)



async def measured(progress: Progress, sizes: dict[str, Any],
                   measure: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """The report of ``measure()``: its sections, the sizes, the machine and the seconds it
    took, the progress line ticking meanwhile."""
    ticker = asyncio.get_running_loop().create_task(progress.tick())
    report: dict[str, Any] = {"sizes": sizes, "machine": machine()}
    started = time.monotonic()
    try:
        report.update(await measure())
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
        progress.clear()
    report["seconds"] = time.monotonic() - started
    return report
