"""The one redactor every text robotgate *says* passes before it leaves: decisions'
reasons and errors, exceptions' messages, events, log records, metric labels, the
CLI's stderr and summaries.  What robotgate *returns* to whoever asked (a crawl's
results, ``robotgate fetch``'s JSON lines, the stores' data) is not said: it keeps
each URL as given or as the server redirected (docs/secrets.md).

The redactor decides by a text's structure, never by a list of secret names, so
it hides what no list foresaw:

- a URL's user information (``//user:PASSWORD@host``: the password goes, the user
  name stays; a user name standing alone goes, since it is often a token; a password
  holding an unescaped ``/``, ``?`` or ``#``, which parsers misread as a port and a
  path, goes up to the ``@``);
- in a URL (``scheme://...``), every query and fragment *value* and every path
  parameter's (``;jsessionid=...``): each becomes a short digest (``~3f9a1c``), the
  same for the same value within a process, so two URLs stay tellable apart; the
  names stay (``?token=~3f9a1c&page=~0b51e2``), so the URL still says what it asked;
- every header's value but those of :data:`HARMLESS_HEADERS`, as a header line
  (``X-Api-Key: ...``, ``Cookie: sid="..."``), a mapping's repr (``'Cookie': '...'``,
  ``"Authorization": "..."``) or a pair (``(b'cookie', b'...')``): it becomes ``***``.

A robots.txt line is the site's public text, not a header: its keys (``Disallow``,
``Crawl-delay``...) are never read as header names, and a decision leaves the rule it
quotes whole (:class:`robotgate.decision.Decision`).  A digest is keyed with a
random key drawn as the process starts: it cannot be reversed by trying values, and
it is stable within one process only.

Pure: standard library only, no I/O.  Every robotgate logger (:data:`LOGGERS`)
carries :class:`RedactingFilter`: each record's message, arguments and traceback
are redacted as the record is made, before any handler sees it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import traceback
from collections.abc import Callable

__all__ = ["HARMLESS_HEADERS", "LOGGERS", "RedactingFilter", "digest", "failure_text",
           "logger", "redact_text", "redact_url", "said_exception"]

HIDDEN = "***"

#: Headers whose values say nothing secret, shown as they are (a URL among them
#: still loses its secrets, as every URL said): a message about a page's answer
#: stays readable.  Every other header's value is hidden.
HARMLESS_HEADERS = frozenset({
    "accept", "accept-encoding", "accept-language", "accept-ranges", "age",
    "cache-control", "connection", "content-encoding", "content-language",
    "content-length", "content-type", "date", "etag", "expires", "host",
    "last-modified", "location", "retry-after", "server", "transfer-encoding",
    "user-agent", "vary", "x-robots-tag"})

# robots.txt's keys: the site's public lines that reasons and logs quote, never headers.
_ROBOTS_KEYS = frozenset({
    "allow", "disallow", "user-agent", "useragent", "crawl-delay", "crawldelay",
    "request-rate", "visit-time", "sitemap", "site-map", "content-usage",
    "content-signal", "clean-param", "noindex"})
# Words that open robotgate's own lines ("robotgate: ...", "allowed: ...", "note: ...",
# failure_text's "Exception: ..."), never a header's name.
_OWN_WORDS = frozenset({"allowed", "disallowed", "error", "exception", "interrupted",
                        "note", "robotgate", "warning"})

_KEY = secrets.token_bytes(16)
_DIGEST = re.compile(r"~[0-9a-f]{6}")


def digest(value: str) -> str:
    """The short digest that stands for ``value`` in what robotgate says: ``~`` and
    six hex digits, keyed per process (the same value, the same digest, in this
    process only; no value can be found from it by trying)."""
    data = value.encode("utf-8", "surrogatepass")
    return "~" + hashlib.blake2b(data, key=_KEY, digest_size=3).hexdigest()


def redact_text(text: str, public: str = "") -> str:
    """``text`` with every URL's user information and query and fragment values, and
    every header value but a harmless one's, hidden (see the module's docstring).
    ``public``: a part of the text that is the site's public text (a robots.txt rule
    a reason quotes), left whole wherever it stands.

    >>> redact_text("407, message='Proxy Authentication Required', "
    ...             "url='http://user:CANARY@127.0.0.1:3128'")
    "407, message='Proxy Authentication Required', url='http://user:***@127.0.0.1:3128'"
    >>> redact_text("<CIMultiDict('Host': 'a', 'X-Api-Key': 'CANARY')>")
    "<CIMultiDict('Host': 'a', 'X-Api-Key': '***')>"
    >>> redact_text("disallowed by 'Disallow: /?sid=7198470' (line 3)")
    "disallowed by 'Disallow: /?sid=7198470' (line 3)"
    >>> redact_text("skipped https://example.com/p?access_token=CANARY") == (
    ...     "skipped https://example.com/p?access_token=" + digest("CANARY"))
    True
    """
    if text.__class__ is not str:
        text = str(text)
    if public and public in text:
        return public.join(redact_text(part) for part in text.split(public))
    if "//" in text:
        if "@" in text:
            text = _USERINFO.sub(_without_secret, _SPLIT_USERINFO.sub(_without_split_secret, text))
        if "://" in text:
            text = _URL.sub(_url_in_text, text)
    quoted = "'" in text or '"' in text
    if quoted and "(" in text and "," in text:
        text = _PAIR.sub(_mapping_without_secret, text)
    if ":" in text:
        if quoted:
            text = _MAPPING.sub(_mapping_without_secret, text)
        text = _fields_hidden(text)
    return text


def redact_url(url: str) -> str:
    """One URL as robotgate says it: its user information's secret hidden, and each
    value of its query, fragment and path parameters a digest (the names kept).

    >>> redact_url("http://user:pw@example.com/a;sid=1?q=x&flag#top") == (
    ...     "http://user:***@example.com/a;sid={}?q={}&{}#{}".format(
    ...         digest("1"), digest("x"), digest("flag"), digest("top")))
    True
    """
    if "@" in url and "//" in url:
        url = _USERINFO.sub(_without_secret, _SPLIT_USERINFO.sub(_without_split_secret, url))
    authority = url.find("//")
    # An authority ends at "/?#" only: a ";" or "=" in it is the user's or the host's
    # own ("http://u;=:@h/"); without one, a ";" starts the path's parameter.
    cut = _first_of(url, "/?#", authority + 2) if authority >= 0 else _first_of(url, "/?#;", 0)
    if cut < 0:
        return url
    head, rest = url[:cut], url[cut:]
    rest, hash_, fragment = rest.partition("#")
    path, mark, query = rest.partition("?")
    if ";" in path:
        path = _PATH_PARAMETER.sub(_parameter_without_value, path)
    if query:
        query = _values_hidden(query)
    if fragment:
        fragment = _values_hidden(fragment)
    return f"{head}{path}{mark}{query}{hash_}{fragment}"


def _first_of(text: str, chars: str, start: int) -> int:
    found = [i for i in (text.find(c, start) for c in chars) if i >= 0]
    return min(found) if found else -1


def _hidden(value: str) -> str:
    """A value's digest (a digest or ``***`` already is one: said again as it is)."""
    if value == HIDDEN or _DIGEST.fullmatch(value):
        return value
    return digest(value)


def _values_hidden(query: str) -> str:
    """``name=value&...`` (a query or a fragment) with each value a digest; a part
    without ``=`` is a value too (``?TOKEN``, ``#section``)."""
    parts = []
    for part in query.split("&"):
        name, equals, value = part.partition("=")
        if equals:
            parts.append(f"{name}={_hidden(value)}" if value else part)
        else:
            parts.append(_hidden(part) if part else part)
    return "&".join(parts)


# ";name=value" in a path (";jsessionid=..."), up to the segment's end.
_PATH_PARAMETER = re.compile(r";([^;=/?#]*)=([^;/?#]*)")


def _parameter_without_value(found: re.Match[str]) -> str:
    value = found.group(2)
    return f";{found.group(1)}={_hidden(value)}" if value else found.group(0)


# "//", then an authority up to its last "@" (a password may hold one).  Tabs and
# newlines are taken in as URL parsers drop them (a password split by one still goes);
# a space, a quote or an angle bracket ends the URL as it ends one in a text.
_USERINFO = re.compile(r"//([^/?# \f\v'\"<>\\]*)@")
# A password holding "/", "?" or "#" unescaped ("//user:pa/ss@host"): parsers end the
# authority there and read "pa" as the port, so the user information runs on to the
# first "@".  A port ("//host:8080/@me": digits, then the path) is no password.
_SPLIT_USERINFO = re.compile(
    r"//([^/?#@:\[\] \f\v'\"<>\\]*):(?!\d*[/?#])([^/?#@ \f\v'\"<>\\]+[/?#][^@ \f\v'\"<>\\]*)@")
# A URL with its scheme, up to where it ends in a text.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# What ends a sentence after a URL, not the URL: "see http://h/x?a=1." or "(http://h/)".
_TRAILING = ".,:;!?)]}"


def _url_in_text(found: re.Match[str]) -> str:
    url = found.group(0)
    end = len(url)
    while end > 0 and url[end - 1] in _TRAILING:
        end -= 1
    return redact_url(url[:end]) + url[end:]


def _without_secret(found: re.Match[str]) -> str:
    userinfo = found.group(1)
    user, colon, password = userinfo.partition(":")
    if not (password if colon else user) or (password if colon else user) == HIDDEN:
        return found.group(0)  # nothing secret: "//@host", "//user:@host", hidden already
    return f"//{user}:{HIDDEN}@" if colon else f"//{HIDDEN}@"


def _without_split_secret(found: re.Match[str]) -> str:
    return f"//{found.group(1)}:{HIDDEN}@"


# A header in a mapping's repr or JSON: a quoted name, ":", a quoted value (escapes
# and the other quote inside it taken in: 'sid="S"').
_MAPPING = re.compile(
    r"""(?<![\w\\])(b?(['"])([A-Za-z0-9][A-Za-z0-9_.-]{0,99})\2[ \t]*:[ \t]*b?(['"]))"""
    r"""((?:\\.|(?!\4)[^\\\r\n])*)(\4)""")
# A header as a pair, a tuple's repr: "(b'cookie', b'sid=S')", "('X-Api-Key', 'S')".
_PAIR = re.compile(
    r"""(?<=\()(\s*b?(['"])([A-Za-z0-9][A-Za-z0-9_.-]{0,99})\2[ \t]*,[ \t]*b?(['"]))"""
    r"""((?:\\.|(?!\4)[^\\\r\n])*)(\4)(?=\s*\))""")


def _mapping_without_secret(found: re.Match[str]) -> str:
    name, value = found.group(3), found.group(5)
    if not value or value == HIDDEN or name.lower() in HARMLESS_HEADERS:
        return found.group(0)
    return f"{found.group(1)}{HIDDEN}{found.group(6)}"


# A header line's name and colon ("X-Api-Key: ", "Set-Cookie:"), not inside a word, a
# path or a URL's query; "scheme://" and "net::ERR_..." are no header.
_FIELD = re.compile(r"(?:(?<=\\[nr])|(?<![\w/.@%?&=#;~\\-]))"
                    r"([A-Za-z][A-Za-z0-9_-]{0,99})[ \t]*:(?![/:])[ \t]*")
# Where a one-word header name (no hyphen) opens a line: the text's start, a line
# break (or one escaped in a repr), a quote or bracket, or after a prefix's ": ".
_LINE_OPENERS = "\r\n'\"([{<"


def _fields_hidden(text: str) -> str:
    """``text`` with the value of each header line hidden, up to the line's end (or
    the quote that opened it).  A name with a hyphen is a header name wherever it
    stands (``X-Api-Key: ``); one word is, Capitalised (``Cookie: ``), where a line
    opens; robots.txt's keys and the words of robotgate's own lines never are."""
    out: list[str] = []
    pos = 0
    for found in _FIELD.finditer(text):
        start = found.start()
        if start < pos:
            continue  # inside a value hidden already
        name = found.group(1)
        lowered = name.lower()
        if lowered in HARMLESS_HEADERS or lowered in _ROBOTS_KEYS:
            continue
        if "-" not in name and not _one_word_field(name, lowered, text, start, found):
            continue
        end = _line_end(text, found.end(), text[start - 1] if start else "")
        value = text[found.end():end]
        if not value or value == HIDDEN:
            continue
        out.append(text[pos:found.end()])
        out.append(HIDDEN)
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _one_word_field(name: str, lowered: str, text: str, start: int,
                    found: re.Match[str]) -> bool:
    """Whether a name without a hyphen opens a header line: Capitalised (``Cookie``) or in
    lower case (``cookie``, as HTTP/2 writes it) where a line opens; never a class's name
    (``OSError: ...``) or a word that opens robotgate's own lines (``allowed: ...``).
    After a quote or bracket the colon needs a space after it: ``'mailto:a@b'`` and
    ``(sqlite:PATH)`` are a URL's scheme, not a header."""
    if lowered in _OWN_WORDS:
        return False
    if name != lowered and not (name[0].isupper() and name[1:] == lowered[1:]):
        return False  # "OSError", "InvalidURL": a class's name, failure_text's prefix
    if not _opens_line(text, start):
        return False
    if start == 0 or text[start - 1] in "\r\n" \
            or text[max(0, start - 2):start] in ("\\n", "\\r", "b'", 'b"'):
        return True  # a line's start, or raw bytes': a header line without the space
    return found.group(0)[-1] in " \t"


def _opens_line(text: str, start: int) -> bool:
    if start == 0 or text[start - 1] in _LINE_OPENERS:
        return True
    before = text[max(0, start - 2):start]
    return before in ("\\n", "\\r", ": ", "b'", 'b"')


def _line_end(text: str, start: int, opener: str) -> int:
    """Where a header line's value ends: the line's end (a line break, or one escaped
    in a repr), or the quote that opened the line."""
    ends = [text.find(c, start) for c in "\r\n"]
    ends += [text.find(escaped, start) for escaped in ("\\r", "\\n")]
    if opener in ("'", '"'):
        ends.append(text.find(opener, start))
    found = [i for i in ends if i >= 0]
    return min(found) if found else len(text)


def failure_text(exc: BaseException) -> str:
    """What failed, said from a foreign exception: its class and its message, redacted
    (the one place an exception's text becomes a reason or a log line's).

    >>> failure_text(OSError("cannot reach http://u:pw@127.0.0.1:1/"))
    'OSError: cannot reach http://u:***@127.0.0.1:1/'
    """
    try:
        said = str(exc)
    except Exception:  # a broken __str__ says nothing
        said = ""
    name = type(exc).__name__
    return f"{name}: {redact_text(said)}" if said else name


def said_exception(exc: BaseException, depth: int = 8) -> BaseException:
    """``exc`` as robotgate's own errors chain it (their ``__cause__`` and
    ``__context__``, which a traceback prints): itself when its str and repr hide no
    secret, else a stand-in whose str, repr and args are redacted; the stand-in is of
    a subclass of its class (``isinstance`` holds), keeps its attributes (what is
    *returned*, as the client's own errors keep it) and its traceback, and its own
    causes are said alike, ``depth`` links deep."""
    if getattr(type(exc), "_said_as_is", False):
        return exc  # robotgate's own error, or a stand-in: said already
    said, shown = _text_of(exc, str), _text_of(exc, repr)
    cause, context = exc.__cause__, exc.__context__
    link = depth > 0
    said_cause = said_exception(cause, depth - 1) if cause is not None and link else None
    said_context = (said_exception(context, depth - 1)
                    if context is not None and link else None)
    if (said == redact_text(said) and shown == redact_text(shown) and said_cause is cause
            and said_context is context):
        return exc
    try:
        stand_in = _stand_in_class(type(exc)).__new__(_stand_in_class(type(exc)))
        stand_in.__dict__.update(exc.__dict__)
    except Exception:  # a class that cannot be made so: a plain stand-in, its name said
        stand_in = _SaidError()
        said = f"{type(exc).__name__}: {said}"
    if isinstance(exc, OSError):  # its slots, which code reads (errno: a local shortage?)
        for name in ("errno", "strerror", "filename", "filename2"):
            value = getattr(exc, name)
            setattr(stand_in, name, redact_text(value) if isinstance(value, str) else value)
    stand_in._said = redact_text(said)  # type: ignore[attr-defined]
    stand_in._shown = redact_text(shown)  # type: ignore[attr-defined]
    stand_in.args = (stand_in._said,) if exc.args else ()  # type: ignore[attr-defined]
    stand_in.__cause__, stand_in.__context__ = said_cause, said_context
    stand_in.__suppress_context__ = exc.__suppress_context__
    stand_in.__traceback__ = exc.__traceback__
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        stand_in.__notes__ = [redact_text(note) for note in notes]  # type: ignore[attr-defined]
    return stand_in


def _text_of(exc: BaseException, said: Callable[[object], str]) -> str:
    try:
        return said(exc)
    except Exception:  # a broken __str__ or __repr__ says nothing
        return ""


class _SaidError(Exception):
    """A foreign exception's stand-in when its class allows none of its own."""

    _said_as_is = True

    def __str__(self) -> str:
        return str(getattr(self, "_said", ""))

    def __repr__(self) -> str:
        return str(getattr(self, "_shown", ""))


_STAND_INS: dict[type[BaseException], type[BaseException]] = {}


def _stand_in_class(cls: type[BaseException]) -> type[BaseException]:
    """The subclass of ``cls`` whose str and repr are the redacted ones: same name and
    module, so a traceback names the class it always did."""
    made = _STAND_INS.get(cls)
    if made is None:
        made = type(cls.__name__, (cls,), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "_said_as_is": True, "__str__": _SaidError.__str__,
            "__repr__": _SaidError.__repr__})
        if len(_STAND_INS) < 256:  # bounded: classes are few
            _STAND_INS[cls] = made
    return made


class RedactingFilter(logging.Filter):
    """Redacts each record of the logger it is on: its message made with its arguments,
    and its traceback (kept as text: the exception itself is dropped, since a handler
    would print its message as it was)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not format: the format alone, as logging would
            message = str(record.msg)
        record.msg = redact_text(message)
        record.args = None
        if record.exc_info:
            record.exc_text = redact_text("".join(traceback.format_exception(
                *record.exc_info)).rstrip("\n"))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


_FILTER = RedactingFilter()

#: Every logger robotgate logs on (docs/logging.md tables them).  A filter on a logger
#: sees only the records made on it, not its children's, so each one carries it: all
#: are given it as this module is imported (before any module of robotgate logs), so
#: a module that asks ``logging.getLogger`` for its name gets a redacting logger too.
LOGGERS = (
    "robotgate",
    "robotgate.robots",
    "robotgate.pacing",
    "robotgate.store",
    "robotgate.store.sqlite",
    "robotgate.store.batching",
    "robotgate.store.redis",
    "robotgate.store.redis.store",
    "robotgate.events",
    "robotgate.frontier",
    "robotgate.sitemaps",
    "robotgate.scrapy",
    "robotgate.integrations.playwright",
    "robotgate.integrations.crawlee",
)


def logger(name: str) -> logging.Logger:
    """The logger ``name``, one of :data:`LOGGERS`, every record of which is redacted.
    Any other name raises ``ValueError``: a new logger is listed there first, so that
    none logs unredacted (``tests/test_logging.py`` checks every ``robotgate`` logger)."""
    if name not in LOGGERS:
        raise ValueError(f"{name!r} is not in robotgate.redaction.LOGGERS")
    log = logging.getLogger(name)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log


for _name in LOGGERS:
    logger(_name)
