"""The one redactor every text robotgate makes from a foreign exception or URL
passes before it leaves: reasons, exception messages, events, log records, the
CLI's output and report.

A secret can hide anywhere in such a text: a proxy's password in aiohttp's
``ClientHttpProxyError`` (``url='http://user:PASSWORD@proxy:3128'``), a token
as a URL's user name, a header shown in a request's repr.  :func:`redact_text`
finds them by their form, not by knowing the URL they came from, so a text from
any client reads safe:

- a URL's user information, wherever the URL stands in the text: the password
  goes, the user name stays; a user name standing alone goes too, since it is
  often a token (as :func:`robotgate.urls.redact` does for one URL);
- the value of an ``Authorization``, ``Proxy-Authorization``, ``Cookie`` or
  ``Set-Cookie`` header, as a header line, a mapping's repr or a header pair;
- in a URL (``scheme://...``), a query parameter's value (``?token=...``,
  ``;jsessionid=...``) when its name says it holds a credential (``access_token``,
  ``X-Amz-Signature``, ``apiKey``, ``PHPSESSID``...), or when the value looks like one
  whatever its name: 32 characters or more of a token's alphabet, letters and digits
  both (a hash, a JWT, a UUID).  The name stays, so the URL still says what it asked;
  a path alone (a robots.txt rule quoted in a reason: public text) is left as it is.

Pure: standard library only, no I/O.  Every robotgate logger (:data:`LOGGERS`)
carries :class:`RedactingFilter`: each record's message, arguments and traceback
are redacted as the record is made, before any handler sees it.
"""

from __future__ import annotations

import logging
import re
import traceback

__all__ = ["LOGGERS", "RedactingFilter", "failure_text", "logger", "redact_text"]

HIDDEN = "***"

# "//", then an authority up to its last "@" (a password may hold one).  Tabs and
# newlines are taken in as URL parsers drop them (a password split by one still goes);
# a space, a quote or an angle bracket ends the URL as it ends one in a text.
_USERINFO = re.compile(r"//([^/?# \f\v'\"<>\\]*)@")
# A header's value as a header line ("Cookie: a=1"), a mapping's repr ("'Cookie':
# 'a=1'", "\"Cookie\": \"a=1\"") or a pair ("(b'cookie', b'a=1')"), up to its quote
# or the line's end.  Not the word in a path ("/cookie:x") or without a colon ("a cookie").
_HEADER = re.compile(
    r"(?<![\w/.-])((?-i:b)?['\"]?(?:proxy-authorization|authorization|set-cookie|cookie)"
    r"(?:['\"]?[ \t]*:[ \t]*|['\"][ \t]*,[ \t]*)(?-i:b)?['\"]?)[^'\"\r\n]+",
    re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` with every URL's user information secret, every credential header's
    value and every credential a query carries replaced by ``***``.  Anything else
    is returned as it is.

    >>> redact_text("407, message='Proxy Authentication Required', "
    ...             "url='http://user:CANARY@127.0.0.1:3128'")
    "407, message='Proxy Authentication Required', url='http://user:***@127.0.0.1:3128'"
    >>> redact_text("see https://ghp_token@example.com/x and mail bot@example.com")
    'see https://***@example.com/x and mail bot@example.com'
    >>> redact_text("<CIMultiDict('Host': 'a', 'Authorization': 'Bearer CANARY')>")
    "<CIMultiDict('Host': 'a', 'Authorization': '***')>"
    >>> redact_text("disallowed by 'Disallow: /cookie:x' (line 2)")
    "disallowed by 'Disallow: /cookie:x' (line 2)"
    >>> redact_text("skipped https://example.com/private?page=2&access_token=CANARY")
    'skipped https://example.com/private?page=2&access_token=***'
    >>> redact_text("disallowed by 'Disallow: /?sid=7198470' (line 3)")
    "disallowed by 'Disallow: /?sid=7198470' (line 3)"
    """
    if text.__class__ is not str:
        text = str(text)
    if "@" in text and "//" in text:
        text = _USERINFO.sub(_without_secret, text)
    lowered = text.lower()  # a tenth of a case-blind search's time: most texts name none
    if "authoriz" in lowered or "cookie" in lowered:
        text = _HEADER.sub(_HIDE_VALUE, text)
    if "=" in text and "://" in text:
        text = _URL.sub(_url_without_credentials, text)
    return text


_HIDE_VALUE = r"\1" + HIDDEN

# A URL with its scheme, up to where it ends in a text.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# A query parameter in a URL (after "?", "&" or a path's ";"), up to where the URL or
# the parameter ends in a text (a URL's last ":", "," or ")" is the text's).
_PARAMETER = re.compile(r"([?&;][^=&#;?\s'\"<>]{1,100}=)([^&#;?\s'\"<>]*[^&#;?\s'\"<>:,)])")
# A parameter name's words: "X-Amz-Signature", "access_token", "apiKey", "PHPSESSID".
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset({
    "token", "secret", "password", "passwd", "pass", "pwd", "passcode", "auth", "key",
    "apikey", "authkey", "sig", "signature", "session", "sessionid", "sid", "credential",
    "credentials", "jwt", "ticket", "otp", "code", "csrf", "xsrf"})
_SECRET_STEMS = ("token", "secret", "passw", "sessid", "session", "apikey", "signature",
                 "credential")
# A value that reads as a credential whatever its name: base64, base64url or hex, as
# sent (a "/" or "=" percent-encoded).  Not a path or an encoded URL ("/", "%3A").
_OPAQUE = re.compile(r"(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])"
                     r"(?:[A-Za-z0-9_.~+=-]|%2[Ff]|%3[Dd]){32,}")


def _secret_name(name: str) -> bool:
    for word in _NAME_WORD.findall(name):
        word = word.lower()
        if word in _SECRET_WORDS or any(stem in word for stem in _SECRET_STEMS):
            return True
    return False


def _url_without_credentials(found: re.Match[str]) -> str:
    url = found.group(0)
    return _PARAMETER.sub(_without_credential, url) if "=" in url else url


def _without_credential(found: re.Match[str]) -> str:
    name, value = found.group(1), found.group(2)
    if _secret_name(name[1:-1]) or _OPAQUE.fullmatch(value):
        return name + HIDDEN
    return found.group(0)


def _without_secret(found: re.Match[str]) -> str:
    userinfo = found.group(1)
    user, colon, password = userinfo.partition(":")
    if not (password if colon else user):
        return found.group(0)  # nothing secret: "//@host", "//user:@host"
    return f"//{user}:{HIDDEN}@" if colon else f"//{HIDDEN}@"


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
