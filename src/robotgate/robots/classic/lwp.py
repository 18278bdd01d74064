"""LWP::RobotUA's conventions for a fetched robots.txt: when the body is used at all."""

from __future__ import annotations

import re

from .dialect import _KEY_DISALLOW
from .perl_text import _WS

__all__ = ["classic_body_usable"]

# LWP::RobotUA: /^\s*Disallow\s*:/mi over the whole body.  Leaving "\n" out
# of the leading \s* matches the same texts (start at the run's last line)
# without rescanning runs of blank lines from every line start.
_WS_NOT_LF_CLASS = "".join(f"\\u{ord(c):04x}" for c in _WS if c != "\n")
_BODY_DISALLOW_RE = re.compile(rf"^[{_WS_NOT_LF_CLASS}]*{_KEY_DISALLOW}", re.MULTILINE)


def classic_body_usable(content_type: str | None, text: str) -> bool:
    """Would LWP::RobotUA hand this (successful) robots.txt response to its rules?

    LWP::RobotUA 6.x parses the body only if ``$res->content_is_text`` (the
    Content-Type, before any ``;``, spaces removed and lower-cased, starts
    with ``text/``; a missing Content-Type is not text) and the decoded body
    has a line matching ``/^\\s*Disallow\\s*:/mi``.  Otherwise it parses an
    empty robots.txt: everything is allowed.  It does not sniff for HTML: an
    HTML page served as ``text/html`` passes if a line starts with
    ``Disallow:``.  (Non-2xx responses, 401 and 403 included, also mean an
    empty robots.txt to LWP::RobotUA; that is the gate's business.)
    """
    if not content_type:
        return False
    mime = re.sub(r"[\t\n\x0b\x0c\r ]+", "", content_type.split(";", 1)[0]).lower()
    if not mime.startswith("text/"):
        return False
    return _BODY_DISALLOW_RE.search(text) is not None
