"""Hands the core's events to their listeners; a listener can never stall or break the gate.

The core holds an :class:`Emitter` only when someone listens (else ``None``: one
test, no event built).  Listeners are called synchronously, in order; one that
raises (or returns an awaitable: only plain functions are listened with) is
counted in :attr:`Emitter.errors` and logged once.  One that blocks blocks the
event loop: that is the listener's to avoid.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence

from ..decision import Decision
from ..events import Event, TurnWaited, UrlSkipped
from ..redaction import failure_text, logger
from ..urls import split_origin

__all__ = ["Emitter", "Listener", "listener_of"]

log = logger("robotgate.events")

Listener = Callable[[Event], object]


def listener_of(on_event: object) -> Listener:
    """``on_event`` as a listener: a plain callable, never a coroutine function."""
    if not callable(on_event):
        raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
    if inspect.iscoroutinefunction(on_event) or inspect.iscoroutinefunction(
            type(on_event).__call__):
        raise TypeError("on_event must be a plain function: events are delivered "
                        "synchronously (hand them to a queue or a task of your own)")
    return on_event


class Emitter:
    """Calls each listener with each event; counts and logs (once) their failures."""

    __slots__ = ("errors", "keys", "listeners")

    def __init__(self, listeners: Sequence[Listener],
                 keys: Callable[[str], str | None] | None = None) -> None:
        self.listeners = tuple(listeners)
        #: The politeness key of an origin if known without I/O (``PaceKeys.cached``).
        self.keys = keys
        self.errors = 0

    def key_of(self, origin: str) -> str:
        keys = self.keys
        key = keys(origin) if keys is not None and origin else None
        return key or ""

    def skipped(self, url: str, decision: Decision) -> None:
        """A crawl skips ``url`` for ``decision`` (its own check, not a request's turn)."""
        origin = split_origin(url)[0]
        self.emit(UrlSkipped(time.time(), origin, self.key_of(origin), url, decision.reason,
                             decision.outcome or "rules", decision.error or ""))

    def waited(self, url: str, seconds: float, reason: str) -> None:
        """A crawl held ``url`` back ``seconds`` for its server's turn (its own wait)."""
        if seconds > 0:
            origin = split_origin(url)[0]
            self.emit(TurnWaited(time.time(), origin, self.key_of(origin), url, seconds, reason))

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                result = listener(event)
            except Exception as exc:
                self._failed(listener, failure_text(exc))
                continue
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if close is not None:
                    close()  # never awaited: no warning about it
                self._failed(listener, "it returned an awaitable, which is not awaited")

    def _failed(self, listener: Listener, why: str) -> None:
        self.errors += 1
        if self.errors == 1:
            log.warning("an event listener failed (%s: %s); the gate goes on, further "
                        "failures are counted in stats['event_errors']",
                        getattr(listener, "__qualname__", repr(listener)), why)


def now() -> float:
    """The events' time: Unix time."""
    return time.time()
