"""A readable account of a gate's state, for debugging."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..politeness.grouping import PaceKeys
    from ..politeness.robots_cache import RobotsCache
    from ..politeness.scheduler import Scheduler
    from .gate import RobotGate

__all__ = ["describe"]


def describe(gate: RobotGate, cache: RobotsCache, scheduler: Scheduler, keys: PaceKeys) -> str:
    """One line for the gate (its public settings), one per origin ``cache`` holds
    (robots.txt, interval, its server in ``scheduler`` by ``keys``, any back-off)."""
    now = time.time()
    sites = cache.sites()
    agent = repr(gate.user_agent)
    if gate.robots_agent != gate.user_agent:
        agent += f" (robots.txt agent {gate.robots_agent!r})"
    lines = [
        f"RobotGate for {agent}: {len(sites)} origins cached, "
        f"{cache.inflight} robots.txt fetches in flight, delay {gate.delay}s, "
        f"pace by {gate.pace_by}, max {gate.max_per_host} per {gate.pace_by}"
        + (f", {gate.max_concurrency} in all" if gate.max_concurrency else ""),
    ]
    for origin, site in sites.items():
        entry = site.entry
        fresh = site.fresh_until - now
        key = keys.cached(origin)
        group = scheduler.get(key) if key is not None else None
        held = cache.known(origin)
        host = group.state if group is not None else held.host if held is not None else None
        wait = scheduler.wait_seconds(group, site.interval) if group is not None else 0.0
        verdict = f", {site.verdict.reason}" if site.verdict is not None else ""
        verdict += _setting(gate, origin, key, site.interval)
        lines.append(
            f"  {origin}: robots.txt {entry.outcome} ({entry.detail or entry.status}), "
            f"{'fresh for ' + _duration(fresh) if fresh > 0 else 'stale'}, "
            f"interval {site.interval:g}s{verdict}"
            + (f", server {group.key}" if group is not None else "")
            + (f", visits {host.visits}" if host is not None else "")
            + (f", backed off to {host.backoff:g}s" if host is not None and host.backoff else "")
            + f", next request {'now' if wait <= 0 else 'in ' + _duration(wait)}"
            + (f", {group.active} in flight, {group.waiting} waiting" if group else "")
        )
    return "\n".join(lines)


def _setting(gate: RobotGate, origin: str, key: str | None, interval: float) -> str:
    """The host setting that applies to ``origin`` (paced by ``key``), and whether
    robots.txt overrules it."""
    setting = gate.hosts.match(origin, key) if gate.hosts else None
    if setting is None:
        return ""
    said = f", host setting {setting.describe()}"
    if setting.delay is not None and interval > setting.delay:
        said += f" (overruled: robots.txt asks {interval:g}s)"
    return said


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.1f}m"
    return f"{seconds:.2f}s"
