"""A store for fleet-slot tests: every slot it grants starts now, and it counts them."""

from __future__ import annotations

from robotgate.store.memory import MemoryStore


class SlotsNow(MemoryStore):
    """A memory store that grants every fleet slot at once and counts the grants."""

    def __init__(self) -> None:
        super().__init__()
        self.reserved = 0

    async def reserve(self, origin: str, interval: float) -> float | None:
        self.reserved += 1
        return 0.0
