"""Key names and value formats of the Redis store (format 3).

Keys (``P`` the prefix, ``O`` an origin, ``G`` a politeness-group key such as
``host:example.com``; both opaque strings, written between braces as the
Redis Cluster hash tag, with ``%``, ``{`` and ``}`` percent-escaped)::

    P:meta          string  robotgate/<format>
    P:epoch         string  a token made when the data began (one server): a worker that
                            finds another, or none, knows Redis lost its data
    P:lost          string  when that was noticed (microseconds, server clock; expires)
    P:robots:{O}    hash    h = JSON header, b = raw body
    P:lock:{O}      string  the robots.txt fetcher's token (PX expiry)
    P:done          channel "saved O" / "released O" (one server)
    P:done:{bN}     the same, on a cluster: 64 channels (sharded pub/sub), N = slot of O mod 64
    P:host:{G}      hash    v visits, lv last visit, na next allowed, vc visits since check,
                            bx back-off and bp its peak (seconds; once a worker backed off),
                            bt when a worker last renewed them (microseconds, server clock)
    P:tat:{G}       string  GCRA theoretical arrival time, microseconds, server clock
                            (expires 1 s after it: a tat beyond its expiry is damage)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from redis.crc import key_slot

from ...urls import redact as redact_url
from ..base import HostState, RobotsEntry, StoreError

__all__ = ["APP", "FORMAT_VERSION", "Keys"]

_T = TypeVar("_T")

APP = "robotgate"
#: The value format this code writes under a prefix (kept in ``P:meta``).
#: 1: keys ``P:kind:O``, host state per origin.  2: hash-tagged keys, host
#: state and pacing per politeness group.  3: the adaptive back-off in the host
#: state (fields a format 2 reader refuses).
FORMAT_VERSION = 3

# Longest TTL the store sets (Redis rejects absurd expiry times).
MAX_TTL = 400 * 86_400.0
#: A stored back-off no worker renewed for this many times its length no longer
#: paces the fleet: the worker narrowing it (one step in 20 per success, the
#: default ``backoff_recovery``, each at least the back-off apart) is gone.
BACKOFF_LAPSE = 20

_HEADER_LEN = 11
_HOST_FIELDS = frozenset({b"v", b"lv", b"na", b"vc", b"bx", b"bp", b"bt"})
_ROBOTS_FIELDS = frozenset({b"h", b"b"})
_ESCAPES = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D"})
#: Channels of the "done" notifications on a cluster: few, fixed, each in its own
#: slot, so that a worker subscribes to all of them once (see notify.py).
BUCKETS = 64


def tag(ident: str) -> str:
    """``ident`` as a hash tag: braces around it, none inside (so the tag is all of it)."""
    return "{" + ident.translate(_ESCAPES) + "}"


def redact(url: str) -> str:
    """The URL without its password, for messages (robotgate's one redactor)."""
    return redact_url(url)


def ms(seconds: float) -> int:
    """A TTL in whole milliseconds, at least 1, at most ``MAX_TTL``."""
    if not math.isfinite(seconds):
        seconds = MAX_TTL if seconds > 0 else 0.0
    return max(1, math.ceil(min(seconds, MAX_TTL) * 1000))


def text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class Keys:
    """The key names under one prefix, and the errors that name them."""

    def __init__(self, prefix: str, label: str) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        if "{" in prefix or "}" in prefix:
            # The hash tag must be the first {...} of every key.
            raise ValueError("prefix must not contain '{' or '}'")
        self.prefix = prefix
        self.label = label
        self.meta = f"{prefix}:meta"
        self.epoch = f"{prefix}:epoch"
        self.lost = f"{prefix}:lost"
        #: The one "done" channel on a single server.
        self.done = f"{prefix}:done"
        #: The "done" channels on a cluster.
        self.buckets = [f"{prefix}:done:{{b{n}}}" for n in range(BUCKETS)]

    def robots(self, origin: str) -> str:
        return f"{self.prefix}:robots:{tag(origin)}"

    def lock(self, origin: str) -> str:
        return f"{self.prefix}:lock:{tag(origin)}"

    def waiting(self, origin: str) -> str:
        """Set by a worker waiting for ``origin``'s fetch (cluster): its end is published."""
        return f"{self.prefix}:wait:{tag(origin)}"

    def bucket(self, origin: str) -> str:
        """The cluster channel that carries ``origin``'s notifications."""
        return self.buckets[key_slot(origin.encode()) % BUCKETS]

    def host(self, group: str) -> str:
        return f"{self.prefix}:host:{tag(group)}"

    def tat(self, group: str) -> str:
        return f"{self.prefix}:tat:{tag(group)}"

    def bad(self, key: str, why: str) -> StoreError:
        return StoreError(
            f"foreign or damaged data under Redis prefix {self.prefix!r} at {self.label}:"
            f" key {key!r} {why}. Delete the key or use another prefix."
        )

    def response_error(self, exc: Exception, keys: Sequence[str]) -> StoreError:
        """The StoreError for an error reply to a command on ``keys``."""
        message = str(exc)
        found = re.search(
            r"BADDATA (.*?) (holds a \w+|is not a pacing time|is a pacing time beyond its expiry"
            r"|has a bad na)", message)
        if found:
            return self.bad(found.group(1), found.group(2))
        if "WRONGTYPE" in message:
            return self.bad(", ".join(repr(k) for k in keys), "holds a value of the wrong type")
        return StoreError(f"Redis at {self.label} refused a robotgate command: {message}")

    def check_meta(self, found: object) -> None:
        """Raise unless ``P:meta`` says robotgate data in this code's format."""
        value = text(found) if isinstance(found, (bytes, str)) else repr(found)
        app, _, version = value.partition("/")
        where = f"Redis prefix {self.prefix!r} at {self.label}"
        if app != APP or not version.isdigit():
            raise StoreError(
                f"{where} holds data of another application ({self.meta!r} is"
                f" {value[:60]!r}, not '{APP}/<n>'). Use another prefix, or delete the keys"
                " under this one."
            )
        found_version = int(version)
        if found_version > FORMAT_VERSION:
            raise StoreError(
                f"{where} holds robotgate data in format {found_version} ({self.meta!r});"
                f" this robotgate reads format {FORMAT_VERSION}. Use another prefix, or"
                " upgrade robotgate."
            )
        if found_version < FORMAT_VERSION:
            raise StoreError(
                f"{where} holds robotgate data in format {found_version} ({self.meta!r}),"
                f" written by an older robotgate; this one reads format {FORMAT_VERSION}"
                " (host state with its back-off and pacing per politeness group, keys"
                " hash-tagged for Redis Cluster). It is not converted in place: it is a"
                " cache, and the workers sharing it must all move at once. Use a new"
                " prefix (robots.txt is then fetched once more per origin), or stop the"
                " old workers and delete the keys under this one:"
                f" redis-cli --scan --pattern '{self.prefix}:*'"
                " | xargs redis-cli unlink"
            )


def robots_header(entry: RobotsEntry) -> bytes:
    """Every field but origin and body, as compact JSON."""
    return json.dumps(
        [
            entry.outcome,
            entry.fetched_at,
            entry.fresh_until,
            entry.status,
            entry.content_type,
            entry.etag,
            entry.last_modified,
            entry.failures,
            entry.final_url,
            entry.detail,
            entry.good_at,
        ],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def decode_robots(keys: Keys, origin: str, key: str, raw: object) -> RobotsEntry | None:
    """The entry stored as ``raw`` (an HGETALL reply), ``None`` if absent."""
    if isinstance(raw, list):  # HGETALL inside a script: a flat field/value list
        raw = dict(zip(raw[::2], raw[1::2], strict=False))
    if not isinstance(raw, dict):
        raise keys.bad(key, f"gave {type(raw).__name__}, not a hash")
    if not raw:
        return None
    if not set(raw) <= _ROBOTS_FIELDS or b"h" not in raw:
        raise keys.bad(key, f"has fields {sorted(raw)[:5]!r}, not a robots entry")
    try:
        header = json.loads(raw[b"h"])
    except ValueError as exc:
        raise keys.bad(key, f"has an unreadable header ({exc})") from exc
    if not isinstance(header, list) or len(header) != _HEADER_LEN:
        raise keys.bad(key, "has a header of the wrong shape")
    try:
        (outcome, fetched_at, fresh_until, status, content_type, etag, last_modified,
         failures, final_url, detail, good_at) = header
        return RobotsEntry(
            origin=origin,
            outcome=_need(outcome, str),
            fetched_at=_number(fetched_at),
            fresh_until=_number(fresh_until),
            status=None if status is None else _need(status, int),
            body=raw.get(b"b"),
            content_type=_opt_str(content_type),
            etag=_opt_str(etag),
            last_modified=_opt_str(last_modified),
            failures=_need(failures, int),
            final_url=_opt_str(final_url),
            detail=_need(detail, str),
            good_at=None if good_at is None else _number(good_at),
        )
    except (TypeError, ValueError) as exc:
        raise keys.bad(key, f"has a header with a bad field ({exc})") from exc


def decode_host(keys: Keys, group: str, key: str, raw: object) -> HostState | None:
    """The host state stored as ``raw`` (an HGETALL reply), ``None`` if absent."""
    if not isinstance(raw, dict):
        raise keys.bad(key, f"gave {type(raw).__name__}, not a hash")
    if not raw:
        return None
    if not set(raw) <= _HOST_FIELDS:
        raise keys.bad(key, f"has fields {sorted(raw)[:5]!r}, not host state")
    try:
        last_visit = raw.get(b"lv")
        return HostState(
            origin=group,
            visits=int(raw.get(b"v", b"0")),
            last_visit=None if last_visit is None else float(last_visit),
            next_allowed=float(raw.get(b"na", b"0")),
            visits_since_check=int(raw.get(b"vc", b"0")),
            backoff=float(raw.get(b"bx", b"0")),
            backoff_peak=float(raw.get(b"bp", b"0")),
        )
    except ValueError as exc:
        raise keys.bad(key, f"has a bad number ({exc})") from exc


def host_args(state: HostState) -> list[Any]:
    """One host's arguments to the flush script (floats as repr: they round-trip exactly)."""
    return [
        state.visits,
        "" if state.last_visit is None else repr(float(state.last_visit)),
        repr(float(state.next_allowed)),
        state.visits_since_check,
        *backoff_args(state),
    ]


def backoff_args(state: HostState) -> tuple[str, str]:
    """The back-off fields, or two empty strings for a worker that never backed off
    this group: it leaves another worker's back-off alone, it did not see it end."""
    if not state.backoff_peak:
        return "", ""
    return repr(float(state.backoff)), repr(float(state.backoff_peak))


def _need(value: object, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{value!r} is not {kind.__name__}")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


def _opt_str(value: object) -> str | None:
    return None if value is None else _need(value, str)
