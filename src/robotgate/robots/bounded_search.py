"""The work-bounded wildcard search of :class:`~robotgate.robots.patterns.RuleSet`.

One query's searches for the pieces of wildcard rules, memoised and costed at
their worst case before they run; see the docstring of
:mod:`robotgate.robots.patterns` for what happens when :data:`MATCH_BUDGET`
is spent.
"""

from __future__ import annotations

import re

__all__ = ["MATCH_BUDGET", "RULE_OVERHEAD", "Search", "Wild"]

# A wildcard rule: (longest piece, index in the rule set,
# first piece, middle pieces, last piece, anchored, has star, pattern)
Wild = tuple[str, int, str, tuple[str, ...], str, bool, bool, str]

#: Work allowed for one query's wildcard rules, in units of about a nanosecond
#: of CPython's worst case (see :class:`Search`): some 15 ms, whatever the
#: file and the path.  Past it, the rules not yet decided are settled
#: conservatively (see :mod:`robotgate.robots.patterns`).
MATCH_BUDGET = 15_000_000
# Estimated cost of trying one wildcard rule, beyond its searches.
RULE_OVERHEAD = 150
# Characters of the compiled pieces kept per rule set (about 18 bytes each),
# and the longest piece compiled at all (re keeps its own cache of 512 too).
_REGEX_CACHE_CHARS = 65536
_REGEX_PIECE_MAX = 2048
# A bounded search scans this many positions first, then twice as many each time.
_WINDOW = 256


class Search:
    """The searches of one bounded query: memoised, and costed before they run.

    Costs are estimates of CPython's worst case, in about nanoseconds on a
    slow core: ``str.find`` may compare every piece character at every path
    position (a needle under 100 characters in a path under 30,000 runs the
    simple search), a compiled pattern (``re`` searches a literal with a
    Knuth-Morris-Pratt table) is linear but costs about 2 us per character to
    compile.  A search scans windows of doubling size, each run the cheaper
    way, so a piece found early costs little; a window that would overdraw
    :attr:`left` is not scanned, and the rule it was for stays undecided.
    Costs never depend on what earlier queries cached: the same query gets
    the same answer.
    """

    __slots__ = ("_chars", "_compiled", "_found", "_regex", "left", "n", "path")

    def __init__(self, path: str, regex: dict[str, re.Pattern[str]]) -> None:
        self.path = path
        self.n = len(path)
        self.left = MATCH_BUDGET
        self._regex = regex
        self._compiled: set[str] = set()  # pieces whose compiling this query paid for
        self._found: dict[tuple[str, int], int] = {}
        self._chars: frozenset[str] | None = None

    @property
    def chars(self) -> frozenset[str]:
        """The characters of the path."""
        chars = self._chars
        if chars is None:
            self.left -= 20 * self.n + 100
            chars = self._chars = frozenset(self.path)
        return chars

    def absent(self, piece: str) -> bool:
        """Whether a search already found that ``piece`` is nowhere in the path."""
        return self._found.get((piece, 0)) == -1

    def find(self, piece: str, pos: int) -> int | None:
        """``path.find(piece, pos)``, or ``None`` if the budget does not cover it."""
        n = self.n
        m = len(piece)
        if m > n - pos:
            return -1
        if not m:
            return pos
        found = self._found
        # A search from an earlier position that found a match at or after
        # `pos`, or none at all, answers this one too.
        hit = found.get((piece, 0))
        if hit is not None and (hit < 0 or hit >= pos):
            return hit
        key = (piece, pos)
        hit = found.get(key)
        if hit is not None:
            return hit
        lo = pos
        size = _WINDOW
        while True:
            # A match starting in [lo, lo + size) ends by `hi`.
            hi = min(n, lo + size + m - 1)
            span = hi - lo
            plain = 60 + span * (3 + (m >> 2))
            linear = 400 + 2 * span
            if piece not in self._compiled:
                linear += 20_000 + 2_000 * m if m <= _REGEX_PIECE_MAX else 1 << 62
            if min(plain, linear) > self.left:
                return None
            if plain <= linear:
                self.left -= plain
                hit = self.path.find(piece, lo, hi)
            else:
                self.left -= linear
                self._compiled.add(piece)
                compiled = self._regex.get(piece)
                if compiled is None:
                    compiled = re.compile(re.escape(piece))
                    regex = self._regex
                    if len(regex) >= 256 or sum(map(len, regex)) + m > _REGEX_CACHE_CHARS:
                        self._regex.clear()
                    self._regex[piece] = compiled
                mt = compiled.search(self.path, lo, hi)
                hit = mt.start() if mt is not None else -1
            if hit >= 0 or hi >= n:
                found[key] = hit
                return hit
            lo += size
            size <<= 1

    def wild_match(self, w: Wild) -> bool | None:
        """Whether the rule ``w`` matches, as the plain wildcard match of
        :mod:`robotgate.robots.patterns` says, with costed, memoised searches;
        ``None``: undecided (the budget did not cover it)."""
        self.left -= RULE_OVERHEAD + (len(w[2]) >> 3)
        path = self.path
        first = w[2]
        if not path.startswith(first):
            return False
        pos = len(first)
        if not w[6]:
            return self.n == pos
        # The key piece must occur somewhere: one search shared by every rule
        # with that piece rules most of them out.
        hit = self.find(w[0], 0)
        if hit is None or hit < 0:
            return None if hit is None else False
        for piece in w[3]:
            j = self.find(piece, pos)
            if j is None or j < 0:
                return None if j is None else False
            pos = j + len(piece)
        last = w[4]
        if w[5]:
            self.left -= len(last) >> 3
            return self.n - len(last) >= pos and path.endswith(last)
        if not last:
            return True
        j = self.find(last, pos)
        return None if j is None else j >= 0
