"""The ``ROBOTGATE_*`` settings of the Scrapy middleware, read into RobotGate's arguments.

Pure: takes anything with Scrapy's ``settings.get`` and imports no Scrapy, so
it is testable alone.  docs/integrations.md has the table of settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...policy.host_settings import HostSettings
from ...store.base import Store
from ...store.from_text import store_from_text

__all__ = ["SETTINGS", "GateSettings", "make_store", "read_settings"]


class SettingsLike(Protocol):
    """What the reader needs of Scrapy's ``Settings``."""

    def get(self, name: str, default: Any = None) -> Any: ...


def _float(value: Any) -> float:
    return float(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None or value == "" else int(value)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return bool(value)


def _text(value: Any) -> str:
    return str(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _hosts(value: Any) -> dict[str, HostSettings]:
    """``{"example.com": {"delay": 5, "max_per_host": 1}, ...}`` (or HostSettings values;
    a JSON text, as ``-s`` gives it)."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if not isinstance(value, Mapping):
        raise ValueError(f"a dict of host -> settings, not {type(value).__name__}")
    hosts: dict[str, HostSettings] = {}
    for host, setting in value.items():
        if isinstance(setting, Mapping):
            unknown = set(setting) - {"delay", "max_per_host"}
            if unknown:
                raise ValueError(f"{host}: unknown settings {sorted(unknown)}")
            setting = HostSettings(**setting)
        if not isinstance(setting, HostSettings):
            raise ValueError(f"{host}: a dict or HostSettings, not {type(setting).__name__}")
        hosts[str(host)] = setting
    return hosts


#: setting name -> (RobotGate keyword, converter, default); ``None`` defaults are the gate's.
#: ``group.field`` is a field of the gate's ``pacing=``, ``network=`` or ``policy=`` object.
SETTINGS: dict[str, tuple[str, Callable[[Any], Any], Any]] = {
    "ROBOTGATE_FROM": ("from_", _optional_text, None),
    "ROBOTGATE_DELAY": ("delay", _float, 1.0),
    "ROBOTGATE_MAX_PER_HOST": ("max_per_host", _optional_int, None),
    "ROBOTGATE_MAX_CONCURRENCY": ("max_concurrency", _optional_int, None),
    "ROBOTGATE_PACE_BY": ("pace_by", _text, "host"),
    "ROBOTGATE_DIALECT": ("dialect", _text, "rfc9309"),
    "ROBOTGATE_MAX_CRAWL_DELAY": ("max_crawl_delay", _float, 60.0),
    "ROBOTGATE_ON_LONG_DELAY": ("pacing.on_long_delay", _text, "skip"),
    "ROBOTGATE_RESPECT_CRAWL_DELAY": ("pacing.respect_crawl_delay", _bool, True),
    "ROBOTGATE_MAX_BACKOFF": ("pacing.max_backoff", _float, 3600.0),
    "ROBOTGATE_LATENCY_FACTOR": ("latency_factor", _optional_float, None),
    "ROBOTGATE_RECHECK_VISITS": ("policy.recheck_visits", _optional_int, 1000),
    "ROBOTGATE_ROBOTS_TIMEOUT": ("policy.timeout", _float, 30.0),
    "ROBOTGATE_MAX_ORIGINS": ("network.max_origins", int, 100_000),
    "ROBOTGATE_ALLOW_PRIVATE_REDIRECTS": ("network.allow_private_redirects", _bool, False),
    "ROBOTGATE_TDMREP": ("tdmrep", _bool, False),
    "ROBOTGATE_HOSTS": ("hosts", _hosts, None),
    "ROBOTGATE_METRICS": ("metrics", _bool, True),
}


@dataclass
class GateSettings:
    """What the middleware builds its gate from."""

    user_agent: str
    store: str = "memory"
    store_prefix: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def read_settings(settings: SettingsLike, spider_user_agent: str | None = None,
                  download_delay: float | None = None) -> GateSettings:
    """Read the ``ROBOTGATE_*`` settings; a bad value raises ValueError naming the setting.

    The User-Agent is ``ROBOTGATE_USER_AGENT``, else the spider's ``user_agent``
    attribute, else Scrapy's ``USER_AGENT`` (what Scrapy would send anyway).
    Scrapy's ``ROBOTSTXT_USER_AGENT`` is the gate's ``robots_agent``.
    ``download_delay`` (a ``DOWNLOAD_DELAY`` the user set) is the default of
    ``ROBOTGATE_DELAY``, which replaces it.

    >>> read_settings({"USER_AGENT": "Bot/1", "ROBOTGATE_DELAY": "0.5"}).options["delay"]
    0.5
    """
    agent = (settings.get("ROBOTGATE_USER_AGENT") or spider_user_agent
             or settings.get("USER_AGENT"))
    if not agent:
        raise ValueError("ROBOTGATE_USER_AGENT (or Scrapy's USER_AGENT) must name the robot")
    options: dict[str, Any] = {}
    # Scrapy's own: the name robots.txt groups are matched against, whatever is sent.
    robots_agent = _optional_text(settings.get("ROBOTSTXT_USER_AGENT"))
    if robots_agent is not None:
        options["robots_agent"] = robots_agent
    for name, (keyword, convert, default) in SETTINGS.items():
        raw = settings.get(name)
        if raw is None and name == "ROBOTGATE_DELAY" and download_delay is not None:
            raw = download_delay
        if raw is None:
            options[keyword] = default
            continue
        try:
            options[keyword] = convert(raw)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: {exc}") from None
    _group(options)
    store = settings.get("ROBOTGATE_STORE") or "memory"
    prefix = _optional_text(settings.get("ROBOTGATE_STORE_PREFIX"))
    return GateSettings(str(agent), str(store), prefix, options)


def _group(options: dict[str, Any]) -> None:
    """Replace the ``group.field`` options with the gate's option objects, built here so
    that a bad value names its setting."""
    from ...gate.options import Network, Pacing
    from ...policy.fetch import FetchPolicy

    fields: dict[str, dict[str, Any]] = {"pacing": {}, "network": {}, "policy": {}}
    for key in [key for key in options if "." in key]:
        group, field_name = key.split(".")
        fields[group][field_name] = options.pop(key)
    # What RobotGate builds by default: the classic dialect keeps 401/403 out of the site.
    fields["policy"]["forbidden_disallows_all"] = options["dialect"] == "classic"
    for group, make in (("pacing", Pacing), ("network", Network), ("policy", FetchPolicy)):
        try:
            options[group] = make(**fields[group])
        except (TypeError, ValueError) as exc:
            names = [name for name, (keyword, _, _) in SETTINGS.items()
                     if keyword.startswith(group + ".")]
            raise ValueError(f"{' or '.join(names)}: {exc}") from None


def make_store(spec: str, prefix: str | None = None) -> Store:
    """The store ``ROBOTGATE_STORE`` names (not opened yet): ``memory`` (default: one
    process), a Redis URL (``redis://``, ``rediss://``, ``unix://``, or ``redis+cluster://``
    for a Redis Cluster: a fleet; ``prefix`` names its keys), or a SQLite file path
    (``sqlite:PATH`` or just ``PATH``: processes on one machine, and restarts); see
    :func:`robotgate.store.from_text.store_from_text`, whose
    :class:`~robotgate.store.from_text.BadStoreText` (a ValueError) a bad one raises."""
    return store_from_text(spec, prefix=prefix)
