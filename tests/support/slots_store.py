"""A store for fleet-slot tests: every slot it grants starts now, and it counts them."""

from __future__ import annotations

from robotgate.store.base import Slots
from robotgate.store.memory import MemoryStore


class SlotsNow(MemoryStore, Slots):
    """A memory store whose fleet slots (it is its own :class:`Slots`) all start at
    once; it counts the grants."""

    def __init__(self) -> None:
        super().__init__()
        self.reserved = 0

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        self.reserved += 1
        return 0.0
