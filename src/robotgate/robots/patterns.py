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

Bounded work.  Wildcard rules with the same pieces are kept once (the one of
highest priority).  When a query could cost more than a plain loop should
(a long path against many wildcard rules), it is answered by a bounded
search instead: every search for a piece is memoised for the query, costed
at its worst case (CPython's ``str.find`` can take path x piece steps; a
compiled pattern takes linear time, at a price to compile), and the cheaper
of the two runs; rules that need a character the path lacks are skipped.
Should the costed work pass :data:`MATCH_BUDGET` before the answer is known,
the rules not yet decided are settled conservatively: the first remaining
``Disallow`` rule that could match counts as matching, the remaining
``Allow`` rules as not matching -- the path is never allowed where the exact
answer would disallow it -- and :meth:`RuleSet.match_exact` says the answer
is not exact.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ..decision import Rule
from ..urls import remove_dot_segments
from .bounded_search import MATCH_BUDGET, RULE_OVERHEAD, Search
from .bounded_search import Wild as _Wild
from .pause import PAUSE_OVER, pause

__all__ = [
    "MATCH_BUDGET",
    "RuleSet",
    "allows_uncompiled",
    "best_ranked",
    "packed_fast_length",
    "wild_match",
]

# Up to this many distinct first pieces, one startswith(tuple) call rules out
# every wildcard rule of a path that starts with none of them.
_PROBE_MAX = 16
# Past this many wildcard rules, index them instead of trying each in turn.
_INDEX_MIN = 24
# CPython shares the ints up to this one: a tuple of them costs no more than an array.
_SHARED_INTS = 256

# Extra work for settling the undecided rules once the budget is spent.
_SETTLE_BUDGET = 5_000_000
# Queries whose worst case is below this take the plain loop, unbounded.
_FAST_WORK = 2_000_000
# What rule sets share: never written (_NO_STOP), or until a bounded search, their
# only writer, makes its own (a long path; most rule sets never see one).
_NO_STOP = array("l")
_NO_NEEDS: list[frozenset[str] | None] = []
_NO_REGEX: dict[str, re.Pattern[str]] = {}


class RuleSet:
    """The ``Allow``/``Disallow`` rules of one group, compiled for matching.

    >>> rs = RuleSet([(False, "/private", 2), (True, "/private/ok*", 3)])
    >>> rs.rule(rs.match("/private/ok.html"))
    Rule(allow=True, pattern='/private/ok*', line=3)
    """

    __slots__ = (
        "_best",
        "_fast_len",
        "_index",
        "_lit",
        "_needs",
        "_parent",
        "_patterns",
        "_regex",
        "_stop",
        "_tries",
        "_upper",
        "_wild",
        "_wild_probe",
        "allows",
        "bound_hits",
        "exact_len",
        "max_work",
        "meta",
    )

    def __init__(self, rules: list[tuple[bool, str, int]]) -> None:
        """``rules``: ``(allow, normalised pattern, line)``; empty patterns are ignored."""
        # Entries are (rank, line, pattern); a rank is 2 * priority + allow: higher wins.
        prefixes, starred = _split_rules(rules)
        # Many rules: a pause between steps (see .pause), as this may run in a worker thread.
        many = len(rules) > PAUSE_OVER
        if many:
            pause()
        # "" prefixes every path: as entry 0 it ends every walk up the chain.
        if "" not in prefixes:
            prefixes[""] = (-1, 0, "")
        best_ranks, meta = self._prefix_tables(prefixes)
        if many:
            pause()
        #: Queries answered conservatively because they hit :data:`MATCH_BUDGET`.
        self.bound_hits = 0
        #: The most work (see :data:`MATCH_BUDGET`) a bounded query has cost.
        self.max_work = 0
        if starred:
            self._compile_wildcards(starred, best_ranks)
            meta += [(line << 1) | (rank & 1) for rank, line, _ in starred]
        else:
            # Most files: prefix rules only; the wildcard machinery is never read.
            self._wild: tuple[_Wild, ...] = ()
            self._index: _WildIndex | None = None
            self._wild_probe: tuple[str, ...] | None = None
            self._stop: array[int] = _NO_STOP
            self._fast_len: tuple[int, ...] = ()
            self._tries: tuple[tuple[_Wild, ...], ...] = ()
            #: Paths up to this long are never near the work bound: match() is exact.
            self.exact_len = 1 << 62
            self._needs: list[frozenset[str] | None] = _NO_NEEDS
            self._regex: dict[str, re.Pattern[str]] = _NO_REGEX
        #: ``line << 1 | allow`` of every rule: prefix ones, then wildcard ones.
        #: A tuple of ints is nothing for the garbage collector to visit (an
        #: array is); an array is smaller once the ints are not shared ones.
        small = not meta or max(meta) <= _SHARED_INTS
        self.meta: Sequence[int] = tuple(meta) if small else array("l", meta)
        #: Whether the rule at that index allows, and a last True that
        #: ``allows[-1]`` reads when no rule matches: ``allows[match(path)]``.
        self.allows = (*[bool(m & 1) for m in meta], True)

    def _prefix_tables(self, prefixes: dict[str, _Entry]) -> tuple[list[int], list[int]]:
        """The prefix entries' tables, in one pass; returns each entry's best rank,
        and the prefix rules' ``meta`` (see :attr:`meta`).

        Entries are sorted; each one's parent is the longest other entry that
        prefixes it, and the best rule of its chain of parents is known in
        advance (every prefix of a path is on one chain).
        """
        lit = sorted(prefixes)
        # Entry 0 is "", the parent of all: with one rule beside it, nothing to work out.
        parent = _parents(lit) if len(lit) > 2 else (-1, 0)[: len(lit)]
        best: list[int] = []  # the rule number of the best rule on the entry's chain
        best_rank: list[int] = []
        patterns: list[str] = []
        meta: list[int] = []
        for s, up in zip(lit, parent, strict=True):
            rank, line, pattern = prefixes[s]
            number = -1
            if rank >= 0:
                number = len(patterns)
                patterns.append(pattern)
                meta.append((line << 1) | (rank & 1))
            if up >= 0 and best_rank[up] > rank:
                best.append(best[up])
                best_rank.append(best_rank[up])
            else:
                best.append(number)
                best_rank.append(rank)
        # Tuples: indexing them is cheaper than indexing arrays.
        self._lit = tuple(lit)
        # Paths are ASCII: an entry followed by "\x80" sorts after every path it prefixes.
        # (A third of the rule set's bytes; testing with startswith instead costs
        # about 770 instructions a walk step, 4.6% of a query.)
        self._upper = tuple([s + "\x80" for s in lit])
        self._parent = parent
        self._best = tuple(best)
        self._patterns = tuple(patterns)
        return best_rank, meta

    def _compile_wildcards(self, starred: list[_Entry], best_ranks: list[int]) -> None:
        n = len(self._patterns)  # wildcard rules are numbered after the prefix ones
        wild = tuple(_compile_wild(pattern, n + j) for j, (*_, pattern) in enumerate(starred))
        if len(wild) > PAUSE_OVER:
            pause()
        self._wild = wild
        ranks = array("l", [-r[0] for r in starred])
        stop = array("l", [bisect_left(ranks, -rank) for rank in best_ranks])
        self._index = _WildIndex(wild) if len(wild) >= _INDEX_MIN else None
        # How many wildcard rules to consider after each entry; without an
        # index, also those rules themselves (tuples shared between entries).
        self._stop = stop
        self._fast_len = _fast_lengths(wild, stop)
        self.exact_len = min(self._fast_len)
        # Written only by a bounded search (a long path): made by the first one.
        self._needs = _NO_NEEDS
        self._regex = _NO_REGEX
        shared: dict[int, tuple[_Wild, ...]] = {}
        small = self._index is None
        self._tries = tuple(shared.setdefault(s, wild[:s]) for s in stop) if small else ()
        self._wild_probe = _wild_probe(wild)

    def __len__(self) -> int:
        return len(self.meta)

    def match(self, path: str) -> int:
        """Index of the winning rule (see :attr:`meta`, :meth:`rule`), or -1 if none matches.

        ``path`` must already be normalised (see :func:`robotgate.urls.normalise_path`).
        Dot segments are resolved first, as the client resolves them before
        sending (``/a/../private`` is sent, and judged, as ``/private``).
        Past :data:`MATCH_BUDGET` the answer is conservative (see :meth:`match_exact`).
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
                if len(path) > self._fast_len[i]:
                    return self._bounded(path, i)[0]
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

    def match_exact(self, path: str) -> tuple[int, bool]:
        """Like :meth:`match`, and whether the answer is exact.

        ``False`` when the query hit :data:`MATCH_BUDGET`: the rule returned is
        then the first ``Disallow`` rule that could match but was not decided
        (or, if there is none, the best rule without a wildcard), so the verdict
        errs towards disallowed.
        """
        if "/." in path:
            path = remove_dot_segments(path)
        i = bisect_right(self._lit, path) - 1
        upper = self._upper
        while i and path >= upper[i]:
            i = self._parent[i]
        if not self._wild:
            return self._best[i], True  # prefix rules only: the walk above decided
        probe = self._wild_probe
        if len(path) > self._fast_len[i] and (probe is None or path.startswith(probe)):
            return self._bounded(path, i)
        return self.match(path), True

    def _bounded(self, path: str, i: int) -> tuple[int, bool]:
        """The wildcard search of :meth:`match` with its work bounded (see the module doc)."""
        stop = self._stop[i]
        wild = self._wild
        index = self._index
        cands: range | list[int]
        if index is None:
            cands = range(stop)
        else:
            cands = index.candidates(path)
            del cands[bisect_left(cands, stop) :]
        if self._regex is _NO_REGEX:
            self._regex, self._needs = {}, [None] * len(wild)
        search = Search(path, self._regex)
        needs = self._needs
        allows = self.allows
        result = -2
        undecided = len(cands)
        for k, j in enumerate(cands):
            if search.left <= 0:
                undecided = k
                break
            w = wild[j]
            need = needs[j]
            if need is None:
                need = needs[j] = frozenset(w[2]).union(*w[3], w[4])
            # Charged whether cached or not: the same query, the same answer.
            search.left -= 20 * len(w[7]) + 100
            if not need <= search.chars:
                continue  # a character it needs is not in the path
            found = search.wild_match(w)
            if found is None:
                undecided = k
                break
            if found:
                result = w[1]
                break
        exact = undecided == len(cands)
        if not exact:
            self.bound_hits += 1
            # Settle the rest: the first Disallow that could match wins.
            search.left = _SETTLE_BUDGET
            for j in cands[undecided:]:
                w = wild[j]
                if allows[w[1]] or search.absent(w[0]):
                    continue
                need = needs[j]
                if search.left > 0:
                    if need is None:
                        need = needs[j] = frozenset(w[2]).union(*w[3], w[4])
                    search.left -= 20 * len(w[7]) + 100
                    if not need <= search.chars:
                        continue
                result = w[1]
                break
        work = min(MATCH_BUDGET, MATCH_BUDGET - search.left) if exact else MATCH_BUDGET
        if work > self.max_work:
            self.max_work = work
        return (self._best[i] if result == -2 else result), exact

    def rule(self, index: int) -> Rule:
        """The :class:`Rule` at ``index`` (as returned by :meth:`match`)."""
        meta = self.meta[index]
        n = len(self._patterns)
        pattern = self._patterns[index] if index < n else self._wild[index - n][7]
        return Rule(bool(meta & 1), pattern, meta >> 1)


def allows_uncompiled(rules: list[tuple[bool, str, int]], path: str, best: int = -1
                      ) -> bool | None:
    """What ``RuleSet(rules)`` answers for ``path`` (``allows[match(path)]``), found
    without building it: a scan of every rule, for a group asked too seldom to pay
    for compiling (its tables hold a string and a slot a rule, where the packed
    rules hold a character).  ``None`` when ``path`` is long enough for the rule
    set's work bound to apply (its answer may then be a conservative one): compile.

    The winner is the matching rule of highest rank (2 * length + allow), so only
    the rank decides the verdict, whatever rule breaks a tie.  ``best``: the rank of
    the best rule known to match already, among others (-1: none).
    """
    if "/." in path:
        path = remove_dot_segments(path)
    wild: list[tuple[int, str]] = []
    # What _fast_lengths charges the plain loop for every wildcard rule (a duplicate
    # too, so the length found is never above the rule set's own).
    steps = 0
    for allow, pattern, _ in rules:
        if not pattern:
            continue
        prefix = pattern.rstrip("*")
        rank = 2 * len(pattern) + allow
        if "*" in prefix or pattern[-1] == "$":
            wild.append((rank, pattern))
            steps += 3 * (2 + pattern.count("*")) + (len(pattern) >> 2) + 1
        elif rank > best and path.startswith(prefix):
            best = rank
    if wild:
        if len(path) > max(0, _FAST_WORK - RULE_OVERHEAD * len(wild)) // steps:
            return None
        wild.sort(reverse=True)
        best = best_ranked([p for _, p in wild], [r & 1 for r, _ in wild], 0, len(wild),
                           path, best)
    return best < 0 or best & 1 == 1


def best_ranked(patterns: list[str], meta: Sequence[int], start: int, end: int,
                path: str, best: int) -> int:
    """The rank of the best rule matching ``path`` among ``patterns[start:end]``
    (normalised, each with a ``*`` or a final ``$``, highest rank first; ``meta[i] & 1``:
    whether the rule allows), or ``best`` if none beats it: the first that matches is
    the best."""
    length = len(path)
    for i in range(start, end):
        pattern = patterns[i]
        rank = 2 * len(pattern) + (meta[i] & 1)
        if rank <= best:
            break
        # Its characters but the stars and a final "$" must fit in the path (counted
        # only for a rule longer than the path).
        if len(pattern) > length and (
                len(pattern) - pattern.count("*") - (pattern[-1] == "$") > length):
            continue
        if wild_match(path, pattern):
            return rank
    return best


def packed_fast_length(rules: int, stars: int, chars: int) -> int:
    """The longest path that ``rules`` wildcard rules, of no more than ``stars`` stars
    and ``chars`` characters in all, answer exactly without compiling them: each rule
    charged as :func:`_fast_lengths` charges it, or more, so the length is never above
    the rule set's own."""
    steps = 7 * rules + 3 * stars + (chars >> 2)
    return max(0, _FAST_WORK - RULE_OVERHEAD * rules) // steps


def wild_match(path: str, pattern: str) -> bool:
    """Whether a normalised pattern with a ``*`` or a final ``$`` matches ``path``
    (compiled as :func:`_compile_wild` does, less what only a rule set reads)."""
    anchored = pattern[-1] == "$"
    pieces = (pattern[:-1] if anchored else pattern).split("*")
    if not path.startswith(pieces[0]):
        return False  # most rules: their first piece is not the path's start
    star = len(pieces) > 1
    last = pieces[-1] if star else ""
    # Empty middle pieces are found where the search is: no need to leave them out.
    return _wild_match(path, ("", 0, pieces[0], tuple(pieces[1:-1]), last, anchored, star,
                              pattern))


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


_Entry = tuple[int, int, str]  # (rank, line, pattern)


def _split_rules(rules: list[tuple[bool, str, int]]) -> tuple[dict[str, _Entry], list[_Entry]]:
    """Prefix rules by their prefix (the best one each), and wildcard rules in priority order.

    A prefix rule is ``/a`` or ``/a*`` (a trailing star changes only the
    priority); wildcard rules come highest rank first, then by line, each
    kept once (:func:`_distinct`).
    """
    prefixes: dict[str, _Entry] = {}
    starred: list[_Entry] = []
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
    if not starred:
        return prefixes, starred  # most groups
    if len(rules) > PAUSE_OVER:
        pause()
    starred.sort(key=lambda r: (-r[0], r[1]))
    return prefixes, _distinct(starred)


def _fast_lengths(wild: tuple[_Wild, ...], stop: array[int]) -> tuple[int, ...]:
    """The longest path the plain loop may take after each entry.

    Its worst case (every piece searched over the whole path) stays below
    :data:`_FAST_WORK`.
    """
    steps = array("q", [0])
    for w in wild:
        pieces = 2 + len(w[3])
        steps.append(steps[-1] + 3 * pieces + (len(w[7]) >> 2) + 1)
    # One int object per distinct length (entries of one stop share theirs).
    lengths: dict[int, int] = {}
    for s in stop:
        if s not in lengths:
            lengths[s] = max(0, _FAST_WORK - RULE_OVERHEAD * s) // steps[s] if s else 1 << 62
    return tuple([lengths[s] for s in stop])


def _wild_probe(wild: tuple[_Wild, ...]) -> tuple[str, ...] | None:
    """The distinct first pieces of the wildcard rules, if few enough to probe with."""
    firsts = tuple({w[2] for w in wild})
    # Every path starts with "/": a floating rule ("/*x") makes the probe useless.
    useful = len(firsts) <= _PROBE_MAX and not {"", "/"} & set(firsts)
    return firsts if useful else None


def _parents(lit: Sequence[str]) -> tuple[int, ...]:
    """For each sorted entry, the index of the longest other entry that is a prefix of it."""
    parent: list[int] = []
    stack: list[int] = []
    for i, s in enumerate(lit):
        while stack and not s.startswith(lit[stack[-1]]):
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    return tuple(parent)


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


def _distinct(starred: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Wildcard rules without those that match exactly where a higher one does.

    Patterns that differ only in runs of stars (``/a*b``, ``/a**b``) match the
    same paths; the first, of highest rank, is always tried before the
    others, which can then never win.  ``starred`` is in priority order.
    """
    seen: set[str] = set()
    out = []
    for rule in starred:
        pattern = rule[2]
        key = _STARS("*", pattern) if "**" in pattern else pattern
        if key not in seen:
            seen.add(key)
            out.append(rule)
    return out


_STARS = re.compile(r"\*\*+").sub
