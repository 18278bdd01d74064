"""The store's failures: counted, told, logged; the crawl goes on without the store.

One :class:`StoreTrouble` per gate, shared by every part that writes to the store
(the robots.txt and tdmrep.json caches, the servers' saved states).
"""

from __future__ import annotations

import time

from ..events import StoreTrouble as StoreTroubleEvent
from ..redaction import failure_text, logger
from ..store.base import Store
from ..urls import scrub
from .emitter import Emitter

__all__ = ["StoreTrouble"]

#: The store's failures: the first one as a warning, each one at DEBUG.
store_log = logger("robotgate.store")


class StoreTrouble:
    """Counts ``store``'s failures and tells ``events`` (None: nobody listens) of each."""

    def __init__(self, store: Store, events: Emitter | None = None) -> None:
        self.store = store
        self.events = events
        #: How many times the store failed.
        self.errors = 0

    def __call__(self, what: str, exc: Exception) -> None:
        """The store could not do ``what`` (``exc``): counted; the first one logged as a
        warning, each one at DEBUG."""
        self.errors += 1
        error = failure_text(exc)
        url = getattr(self.store, "url", None)
        if isinstance(url, str):  # a Redis URL may hold a password; the error may show it
            error = scrub(error, url)
        events = self.events
        if events is not None:
            events.emit(StoreTroubleEvent(time.time(), "", "", what, error))
        if self.errors == 1:
            store_log.warning("the store could not %s (%s); going on without it, "
                              "further store errors are counted in stats['store_errors']",
                              what, error)
        else:
            store_log.debug("the store could not %s (%s); %d store errors so far", what,
                            error, self.errors)
