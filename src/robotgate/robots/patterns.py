"""Compiled rule sets: longest-match of robots.txt path patterns in linear time.

A group's rules are split by shape so the common cases cost few steps:

* prefix rules (no ``*`` but trailing ones, no final ``$``) live in one
  sorted tuple; a ``bisect`` and a walk up a chain of parents (entries that
  are prefixes of each other) find the longest one that prefixes the path,
  and the best rule of every chain is worked out in advance;
* other patterns are split at ``*`` into literal pieces matched left to
  right with ``str.find``: greedy leftmost matching is exact for ``*`` globs
  and never backtracks, so the cost is linear in pattern plus path, whatever
  the number of stars.  They are tried in priority order, so the first that
  matches wins, and only those that would beat the best prefix rule are
  tried; a group with many of them indexes them by their first piece (found
  like the prefixes) and by how long a path they need.

Priority is the pattern's length in octets (RFC 9309 2.2.2); on a tie an
allow rule wins.  Paths are ASCII, since they are percent-encoded first.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from ..decision import Rule
from ..urls import remove_dot_segments

__all__ = ["RuleSet"]

# A wildcard rule: (longest piece, index in the rule set,
# first piece, middle pieces, last piece, anchored, has star, pattern)
_Wild = tuple[str, int, str, tuple[str, ...], str, bool, bool, str]

# Up to this many distinct first pieces, one startswith(tuple) call rules out
# every wildcard rule of a path that starts with none of them.
_PROBE_MAX = 16
# Past this many wildcard rules, index them instead of trying each in turn.
_INDEX_MIN = 24


class RuleSet:
    """The ``Allow``/``Disallow`` rules of one group, compiled for matching.

    >>> rs = RuleSet([(False, "/private", 2), (True, "/private/ok*", 3)])
    >>> rs.rule(rs.match("/private/ok.html"))
    Rule(allow=True, pattern='/private/ok*', line=3)
    """

    __slots__ = (
        "_best",
        "_index",
        "_lit",
        "_parent",
        "_patterns",
        "_stop",
        "_tries",
        "_upper",
        "_wild",
        "_wild_probe",
        "allows",
        "meta",
    )

    def __init__(self, rules: list[tuple[bool, str, int]]) -> None:
        """``rules``: ``(allow, normalised pattern, line)``; empty patterns are ignored."""
        # Prefix rules ("/a", and "/a*": a trailing star changes only the
        # priority), by the prefix: (rank, line, pattern) of the best one.
        # A rank is 2 * priority + allow: higher wins.
        prefixes: dict[str, tuple[int, int, str]] = {}
        starred: list[tuple[int, int, str]] = []
        for allow, pattern, line in rules:
            if not pattern:
                continue
            prefix = pattern.rstrip("*")
            rank = 2 * len(pattern) + allow
            if "*" in prefix or pattern[-1] == "$":
                starred.append((rank, line, pattern))
                continue
            old = prefixes.get(prefix)
            # Same prefix twice: the higher rank wins, else the first line stays.
            if old is None or rank > old[0]:
                prefixes[prefix] = (rank, line, pattern)
        n = len(prefixes)
        # "" prefixes every path: as entry 0 it ends every walk up the chain.
        if "" not in prefixes:
            prefixes[""] = (-1, 0, "")
        lit = tuple(sorted(prefixes))
        entries = [prefixes[p] for p in lit]
        real = [e for e in entries if e[0] >= 0]
        # Highest rank first, then by line.
        starred.sort(key=lambda r: (-r[0], r[1]))
        self._lit = lit
        # Paths are ASCII: an entry followed by "\x80" sorts after every path it prefixes.
        self._upper = tuple(p + "\x80" for p in lit)
        parent = _parents(lit)
        # Tuples: indexing them is cheaper than indexing arrays.
        self._parent = tuple(parent)
        rule_of = array("l", [-1]) * len(lit)
        k = 0
        for i, e in enumerate(entries):
            if e[0] >= 0:
                rule_of[i] = k
                k += 1
        # Every prefix of a path is on one chain of parents: the best rule of
        # each chain is known in advance, and so are the wildcard rules that
        # could beat it (those of higher rank, first in `starred`).
        best = array("l", range(len(lit)))
        for i in range(1, len(lit)):
            up = parent[i]
            if entries[best[up]][0] > entries[i][0]:
                best[i] = best[up]
        self._best = tuple([rule_of[b] for b in best])
        self._patterns = tuple(e[2] for e in real)
        wild = tuple(_compile_wild(pattern, n + j) for j, (*_, pattern) in enumerate(starred))
        self._wild = wild
        ranks = array("l", [-r[0] for r in starred])
        stop = array("l", [bisect_left(ranks, -entries[b][0]) for b in best])
        self._index = _WildIndex(wild) if len(wild) >= _INDEX_MIN else None
        # With an index, how many wildcard rules to consider after each entry;
        # without, those rules themselves (tuples shared between entries).
        self._stop = stop if self._index is not None else array("l")
        shared: dict[int, tuple[_Wild, ...]] = {}
        small = wild and self._index is None
        self._tries = tuple(shared.setdefault(s, wild[:s]) for s in stop) if small else ()
        firsts = tuple({w[2] for w in wild})
        # Every path starts with "/": a floating rule ("/*x") makes the probe useless.
        useful = len(firsts) <= _PROBE_MAX and not {"", "/"} & set(firsts)
        self._wild_probe = firsts if useful else None
        #: ``line << 1 | allow`` of every rule: prefix ones, then wildcard ones.
        self.meta = array("l", [(e[1] << 1) | (e[0] & 1) for e in real + starred])
        #: Whether the rule at that index allows, and a last True that
        #: ``allows[-1]`` reads when no rule matches: ``allows[match(path)]``.
        self.allows = tuple([bool(m & 1) for m in self.meta] + [True])

    def __len__(self) -> int:
        return len(self.meta)

    def match(self, path: str) -> int:
        """Index of the winning rule (see :attr:`meta`, :meth:`rule`), or -1 if none matches.

        ``path`` must already be normalised (see :func:`robotgate.urls.normalise_path`).
        Dot segments are resolved first, as the client resolves them before
        sending (``/a/../private`` is sent, and judged, as ``/private``).
        """
        if "/." in path:
            path = remove_dot_segments(path)
        # The longest entry that prefixes `path` is the largest entry <= path
        # or one of its ancestors; entry 0, "", prefixes all.
        i = bisect_right(self._lit, path) - 1
        upper = self._upper
        while i and path >= upper[i]:
            i = self._parent[i]
        if self._wild:
            probe = self._wild_probe
            if probe is None or path.startswith(probe):
                index = self._index
                if index is None:
                    # In priority order, so the first match wins.
                    for w in self._tries[i]:
                        if w[0] in path and _wild_match(path, w):
                            return w[1]
                else:
                    stop = self._stop[i]
                    wild = self._wild
                    for j in index.candidates(path):
                        if j >= stop:
                            break
                        w = wild[j]
                        if w[0] in path and _wild_match(path, w):
                            return w[1]
        return self._best[i]

    def rule(self, index: int) -> Rule:
        """The :class:`Rule` at ``index`` (as returned by :meth:`match`)."""
        meta = self.meta[index]
        n = len(self._patterns)
        pattern = self._patterns[index] if index < n else self._wild[index - n][7]
        return Rule(bool(meta & 1), pattern, meta >> 1)


class _WildIndex:
    """Which of many wildcard rules can match a path, in priority order.

    A rule whose first piece is more than ``/`` can only match a path that
    starts with that piece: those pieces are found like plain prefixes.  The
    others ("floating": ``/*x``, ``*x``) need a path at least as long as their
    pieces, and they are sorted by priority, which bounds that length; a
    bisect skips those the path is too short for.
    """

    __slots__ = ("_firsts", "_float_pri", "_floating", "_nodes", "_parent", "_slack")

    def __init__(self, wild: tuple[_Wild, ...]) -> None:
        nodes: dict[str, list[int]] = {}
        floating: list[int] = []
        slack = 0
        for j, w in enumerate(wild):
            if len(w[2]) > 1:
                nodes.setdefault(w[2], []).append(j)
            else:
                floating.append(j)
                # Priority minus the octets a match needs: the stars and the "$".
                need = len(w[2]) + sum(map(len, w[3])) + len(w[4])
                slack = max(slack, len(w[7]) - need)
        self._firsts = tuple(sorted(nodes))
        self._parent = _parents(self._firsts)
        self._nodes = tuple(tuple(nodes[f]) for f in self._firsts)
        self._floating = tuple(floating)
        # Negated priorities, ascending, for bisect.
        self._float_pri = array("l", [-len(wild[j][7]) for j in floating])
        self._slack = slack

    def candidates(self, path: str) -> list[int]:
        """Positions in the wildcard tuple of the rules that may match ``path``, ascending."""
        # Rules of priority above len(path) + slack need more octets than it has.
        start = bisect_left(self._float_pri, -(len(path) + self._slack))
        out = list(self._floating[start:])
        firsts = self._firsts
        i = bisect_right(firsts, path) - 1
        parent = self._parent
        while i >= 0:
            if path.startswith(firsts[i]):
                # Every ancestor of a prefix is a prefix too.
                while i >= 0:
                    out += self._nodes[i]
                    i = parent[i]
                break
            i = parent[i]
        out.sort()
        return out


def _parents(lit: tuple[str, ...]) -> array[int]:
    """For each sorted entry, the index of the longest other entry that is a prefix of it."""
    parent = array("l", [-1]) * len(lit)
    stack: list[int] = []
    for i, s in enumerate(lit):
        while stack and not s.startswith(lit[stack[-1]]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def _compile_wild(pattern: str, index: int) -> _Wild:
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    pieces = body.split("*")
    star = len(pieces) > 1
    middle = tuple(p for p in pieces[1:-1] if p)
    last = pieces[-1] if star else ""
    # The longest piece after the first (or the whole of "/exact$") must occur
    # in the path: the cheapest test that rules most out.
    key = max((*middle, last), key=len) if star else pieces[0]
    return (key, index, pieces[0], middle, last, anchored, star, pattern)


def _wild_match(path: str, w: _Wild) -> bool:
    first = w[2]
    if not path.startswith(first):
        return False
    pos = len(first)
    if not w[6]:
        # No star, so "/exact$".
        return len(path) == pos
    middle = w[3]
    last = w[4]
    for piece in middle:
        j = path.find(piece, pos)
        if j < 0:
            return False
        pos = j + len(piece)
    if w[5]:
        return len(path) - len(last) >= pos and path.endswith(last)
    return not last or path.find(last, pos) >= 0
