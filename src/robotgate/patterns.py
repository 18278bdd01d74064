"""Compiled rule sets: longest-match of robots.txt path patterns in linear time.

A group's rules are split by shape so the common cases run in C:

* plain prefixes (no ``*``, no trailing ``$``) live in one sorted tuple; one
  ``str.startswith(tuple)`` call rejects a path no prefix matches, and a few
  ``bisect`` steps find the longest prefix that does;
* patterns with ``*`` or a trailing ``$`` are split at ``*`` into literal
  pieces matched left to right with ``str.find``: greedy leftmost matching is
  exact for ``*`` globs and never backtracks, so the cost is linear in
  pattern plus path, whatever the number of stars.

Priority is the pattern's length in octets (RFC 9309 2.2.2); on a tie an
allow rule wins.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import compress

from .decision import Rule

__all__ = ["RuleSet"]

# A wildcard entry: (priority, meta, first piece, middle pieces, last piece,
# anchored, has star, pattern, longest piece after the first)
_Wild = tuple[int, int, str, tuple[str, ...], str, bool, bool, str, str]


def _meta(allow: bool, line: int) -> int:
    return (line << 1) | allow


class RuleSet:
    """The ``Allow``/``Disallow`` rules of one group, compiled for matching.

    >>> rs = RuleSet([(False, "/private", 2), (True, "/private/ok*", 3)])
    >>> rs.rule(rs.match("/private/ok.html"))
    Rule(allow=True, pattern='/private/ok*', line=3)
    """

    __slots__ = ("_lit", "_parent", "_wild", "_wild_first", "_wild_keys", "meta")

    def __init__(self, rules: list[tuple[bool, str, int]]) -> None:
        """``rules``: ``(allow, normalised pattern, line)``; empty patterns are ignored."""
        literal: dict[str, int] = {}
        wild: list[_Wild] = []
        for allow, pattern, line in rules:
            if not pattern:
                continue
            if "*" in pattern or pattern[-1] == "$":
                wild.append(_compile_wild(allow, pattern, line))
            else:
                old = literal.get(pattern)
                # Same pattern twice: allow beats disallow, else the first line stays.
                if old is None or (allow and not old & 1):
                    literal[pattern] = _meta(allow, line)
        lit = tuple(sorted(literal))
        # Highest priority first; at equal priority allow rules first, then by line.
        wild.sort(key=lambda w: (-w[0], -(w[1] & 1), w[1] >> 1))
        self._lit = lit
        self._parent = _parents(lit)
        self._wild = tuple(wild)
        # One C call rules out every wildcard rule whose first piece is not a prefix.
        self._wild_first = tuple({w[2] for w in wild})
        self._wild_keys = tuple(w[8] for w in wild)
        #: ``line << 1 | allow`` of every rule: literal ones, then wildcard ones.
        self.meta = array("l", [literal[p] for p in lit] + [w[1] for w in wild])

    def __len__(self) -> int:
        return len(self.meta)

    def match(self, path: str) -> int:
        """Index of the winning rule (see :attr:`meta`, :meth:`rule`), or -1 if none matches.

        ``path`` must already be normalised (see :func:`robotgate.urls.normalise_path`).
        """
        best_pri = -1
        best = -1
        lit = self._lit
        if lit and path.startswith(lit):
            # The longest prefix of `path` in `lit` is the largest entry <= path
            # or one of its ancestors (entries that are prefixes of it).
            i = bisect_right(lit, path) - 1
            parent = self._parent
            while i >= 0:
                s = lit[i]
                if path.startswith(s):
                    best_pri = len(s)
                    best = i
                    break
                i = parent[i]
        if self._wild_first and path.startswith(self._wild_first):
            allow_best = best >= 0 and self.meta[best] & 1
            wild = self._wild
            # Only rules whose longest piece occurs in the path can match; the
            # scan for those runs in C (map/compress), not in a Python loop.
            for j in compress(range(len(wild)), map(path.__contains__, self._wild_keys)):
                w = wild[j]
                pri = w[0]
                if pri < best_pri or (pri == best_pri and (allow_best or not w[1] & 1)):
                    break
                if path.startswith(w[2]) and _wild_match(path, w):
                    return len(lit) + j
        return best

    def rule(self, index: int) -> Rule:
        """The :class:`Rule` at ``index`` (as returned by :meth:`match`)."""
        meta = self.meta[index]
        n = len(self._lit)
        pattern = self._lit[index] if index < n else self._wild[index - n][7]
        return Rule(bool(meta & 1), pattern, meta >> 1)


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


def _compile_wild(allow: bool, pattern: str, line: int) -> _Wild:
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    pieces = body.split("*")
    star = len(pieces) > 1
    middle = tuple(p for p in pieces[1:-1] if p)
    last = pieces[-1] if star else ""
    key = max((*middle, last), key=len)
    return (len(pattern), _meta(allow, line), pieces[0], middle, last, anchored, star, pattern, key)


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
    anchored = w[5]
    for piece in middle:
        j = path.find(piece, pos)
        if j < 0:
            return False
        pos = j + len(piece)
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return not last or path.find(last, pos) >= 0
