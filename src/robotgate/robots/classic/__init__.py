"""The classic dialect: the 1994 robots.txt standard as WWW::RobotRules applies it.

WWW::RobotRules 6.02 (Perl's libwww, used by LWP::RobotUA) is the reference
implementation of "A Standard for Robot Exclusion" (1994).  This package
reproduces its verdicts, quirks included, so that a crawler can behave exactly
as an LWP robot would:

* records are separated by blank lines; a line holding only a comment is not
  blank; a ``User-agent`` line after a ``Disallow`` line starts a new record;
  ``Disallow`` lines before the first ``User-agent`` line belong to ``*``;
* the robot's name is the first word of its User-Agent, without version
  (``"FooBot/1.2 [http://foobot.int]"`` is ``FooBot``), and a record is the
  robot's when one of its ``User-agent`` values, lower-cased, is a substring
  of that name, lower-cased (so ``User-agent: bot`` and an empty
  ``User-agent:`` name every robot called ``...bot``, or every robot);
* the first record naming the robot replaces all ``*`` records; otherwise
  the ``Disallow`` lines of every ``*`` record apply;
* only ``Disallow`` is understood: a plain prefix of the URL's path plus
  query, first match wins, and an empty value allows everything from there
  on (``Disallow: /a`` then ``Disallow:`` blocks ``/a`` only);
* values are read as URI references relative to the robots.txt URL and
  percent-escaped as Perl's URI module does (so ``Disallow: /a b`` is
  ``/a%20b``, ``Disallow: tmp`` is ``/tmp``, ``Disallow: ?x`` is
  ``/robots.txt?x``); references to another scheme, host or port are
  ignored; nothing else is normalised (``/%7E`` and ``/~`` differ);
* lines end at CR, LF or CRLF; ``\\s`` and case-insensitivity follow Perl's
  Unicode rules, not Python's.

Deliberate differences: a queried URL is judged as the client sends it, its
path's dot segments removed (``/a/../private`` is ``/private``), where
WWW::RobotRules matches it as written; the text is decoded by
:mod:`robotgate.robots.body` (first 500 KiB only, a BOM dropped), where LWP
reads the whole body and keeps a UTF-8 BOM as part of the first line; and,
given the robots.txt URL, rules do not depend on the queried URL's host,
since a :class:`ClassicRobotsTxt` describes one origin.  Parsed without that
URL, a file judges each absolute URL as the robots.txt of that URL's origin
would (WWW::RobotRules keeps rules per host), and a bare path as if on a host
no rule names.

Modules: :mod:`.dialect` (records, :class:`ClassicRobotsTxt`,
:func:`parse_classic`), :mod:`.perl_uri` (the URI.pm operations: resolving
values against the robots.txt URL, escaping, host keys), :mod:`.perl_text`
(Perl's whitespace and case rules), :mod:`.lwp` (LWP::RobotUA's fetch
conventions, :func:`classic_body_usable`).
"""

from __future__ import annotations

from .dialect import ClassicRobotsTxt, parse_classic
from .lwp import classic_body_usable

__all__ = ["ClassicRobotsTxt", "classic_body_usable", "parse_classic"]
