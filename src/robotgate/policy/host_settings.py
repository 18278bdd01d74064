"""Per-host settings: a server's own delay and cap, by host, ``*.domain`` or politeness key.

Pure: :class:`HostTable` matches an origin (and its politeness key) to the
:class:`HostSettings` that apply.  A setting never makes a server faster than its
robots.txt asks: Crawl-delay, Request-rate, Retry-After and back-off still win
when longer (the scheduler takes the longest).

>>> table = HostTable({"example.com": HostSettings(delay=5.0), "*.example.org":
...                    HostSettings(delay=0.2)})
>>> table.match("https://example.com", "host:example.com").delay
5.0
>>> table.match("https://a.b.example.org", None).delay
0.2
>>> table.match("https://example.net", None) is None
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["HostSettings", "HostTable"]


@dataclass(frozen=True, slots=True)
class HostSettings:
    """A server's own ``delay`` (seconds between requests, instead of the gate's) and
    ``max_per_host`` (requests in flight, instead of the gate's); None keeps the gate's."""

    delay: float | None = None
    max_per_host: int | None = None

    def __post_init__(self) -> None:
        delay = self.delay
        if delay is not None and (not isinstance(delay, (int, float)) or isinstance(delay, bool)
                                  or not math.isfinite(delay) or delay < 0):
            raise ValueError(f"HostSettings delay must be a finite number >= 0, not {delay!r}")
        cap = self.max_per_host
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise ValueError(f"HostSettings max_per_host must be an int >= 1, not {cap!r}")

    def describe(self) -> str:
        parts = []
        if self.delay is not None:
            parts.append(f"delay {self.delay:g}s")
        if self.max_per_host is not None:
            parts.append(f"max {self.max_per_host}")
        return ", ".join(parts) or "no change"


class HostTable:
    """The settings of each host: exact names, ``*.domain`` patterns (the domain and
    every name under it; the longest pattern wins) and politeness keys (``host:...``,
    ``domain:...``, ``ip:...``, an origin).  An exact key or host wins over a pattern."""

    __slots__ = ("_exact", "_patterns")

    def __init__(self, settings: Mapping[str, HostSettings]) -> None:
        self._exact: dict[str, HostSettings] = {}
        self._patterns: dict[str, HostSettings] = {}
        for name, setting in settings.items():
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"a host setting needs a host, pattern or key, not {name!r}")
            if not isinstance(setting, HostSettings):
                raise TypeError(f"the setting of {name!r} must be a HostSettings, "
                                f"not {type(setting).__name__}")
            name = name.strip().lower().rstrip(".")
            if name.startswith("*."):
                self._patterns[name[2:]] = setting
            else:
                self._exact[name] = setting

    def __bool__(self) -> bool:
        return bool(self._exact or self._patterns)

    def items(self) -> list[tuple[str, HostSettings]]:
        return [*self._exact.items(), *(("*." + d, s) for d, s in self._patterns.items())]

    def match(self, origin: str, key: str | None) -> HostSettings | None:
        """The settings of ``origin`` (``scheme://host[:port]``) whose politeness key is
        ``key`` (None: not known yet), or None."""
        exact = self._exact
        if key is not None:
            found = exact.get(key.lower())
            if found is not None:
                return found
        found = exact.get(origin.lower())
        if found is not None:
            return found
        host = host_of(origin)
        found = exact.get(host)
        if found is not None or not self._patterns:
            return found
        if key is not None and key.startswith("domain:"):
            host = key[7:]  # the registrable domain the server is paced by
        name = host
        while name:
            found = self._patterns.get(name)
            if found is not None:
                return found
            name = name.partition(".")[2]
        return None


def host_of(origin: str) -> str:
    """The host of ``scheme://host[:port]`` (lowercase, no brackets or port)."""
    rest = origin.partition("://")[2] or origin
    rest = rest.rpartition("@")[2]
    if rest.startswith("["):
        return rest[1:rest.find("]")].lower()
    return rest.partition(":")[0].lower().rstrip(".")
