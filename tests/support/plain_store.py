"""A store of a third party's kind: robots.txt entries and host states in dicts, and no
capability beyond the base :class:`~robotgate.store.base.Store`."""

from __future__ import annotations

from robotgate.records import HostState, RobotsEntry
from robotgate.store.base import Store

__all__ = ["PlainStore"]


class PlainStore(Store):
    """A third-party store that declares no capability beyond the base."""

    def __init__(self) -> None:
        self.robots: dict[str, RobotsEntry] = {}
        self.hosts: dict[str, HostState] = {}

    async def load_robots(self, origin: str) -> RobotsEntry | None:
        return self.robots.get(origin)

    async def save_robots(self, entry: RobotsEntry) -> None:
        self.robots[entry.origin] = entry

    async def load_host(self, origin: str) -> HostState | None:
        return self.hosts.get(origin)

    async def save_host(self, state: HostState) -> None:
        self.hosts[state.origin] = state
