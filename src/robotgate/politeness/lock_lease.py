"""How long a fleet fetch lock is asked for: long enough that its holder's renewals land
before it ends, in a process whose lock calls come back late (a machine with more runnable
processes than cores: its loop and the store's replies lag by seconds)."""

from __future__ import annotations

from collections.abc import Callable

#: A lock is asked for at least this many times the lateness lately seen: it is renewed a
#: third of its life after the last renewal, so a renewal as late as that lands with a
#: third of the life to spare.
PER_LATENESS = 3.0
#: ... and for no longer than this (s): a worker killed while it holds one holds the
#: others up at most this long, however late its calls came.
LONGEST = 60.0
#: Lateness seen is forgotten at this rate (s a s): a busy spell lengthens the leases for
#: a few minutes after it.
FADE = 0.1


class LockLease:
    """The lateness of this process's fetch lock calls (from when each was due to when
    its answer was read), and the lease a lock taken or renewed now is asked for."""

    __slots__ = ("_clock", "_late", "_seen_at")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._late = 0.0
        self._seen_at = 0.0

    def late(self) -> float:
        """The longest lateness lately seen (s), faded since."""
        return max(0.0, self._late - FADE * (self._clock() - self._seen_at))

    def note(self, due: float, answered: float) -> None:
        """A lock call due at ``due`` was answered at ``answered`` (the clock's seconds)."""
        late = answered - due
        if late > self.late():
            self._late, self._seen_at = late, self._clock()

    def lease(self, shortest: float) -> float:
        """The lease to ask for: ``shortest``, or longer while calls come back late."""
        return min(max(shortest, PER_LATENESS * self.late()), max(shortest, LONGEST))
