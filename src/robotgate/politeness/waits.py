"""How long until a server may be asked, and why it must wait.

The reasons a request waits before its server may be asked:

* ``"delay"``: the gate's interval since the server's last request or answer;
* ``"crawl-delay"``: the longer interval its robots.txt asks (Crawl-delay, Request-rate);
* ``"back-off"``: the interval widened after 429/503 answers (or slow ones);
* ``"retry-after"``: a pause a 429/503's ``Retry-After`` asked for;
* ``"stored"``: a pause the store kept from another run or process;
* ``"concurrency"``: the server could be asked, but every crawl worker was busy.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BACKING_OFF", "NO_WAIT", "ServerWait"]

#: The reasons that mean the server asked the crawl to slow down.
BACKING_OFF = frozenset({"back-off", "retry-after"})


class ServerWait(NamedTuple):
    """Seconds until a server may be asked, why it must wait (``""``: it need not),
    and the interval it is owed between two requests (``None``: unknown)."""

    wait: float
    reason: str
    interval: float | None


NO_WAIT = ServerWait(0.0, "", None)
