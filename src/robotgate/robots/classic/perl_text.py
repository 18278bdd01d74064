"""Perl's text rules, as WWW::RobotRules meets them on Unicode strings.

Perl's ``\\s``, its ``/i`` case folding and its ``lc`` differ from Python's
in a few characters; the classic dialect follows Perl's.
"""

from __future__ import annotations

# Perl's \s on Unicode strings (Python's \s adds U+001C..U+001F).
_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_WS_CLASS = "".join(f"\\u{ord(c):04x}" for c in _WS)
# Perl's /i: "s" also matches U+017F (long s); Python's would also let "i"
# match U+0130 and U+0131, which Perl does not.
_S = "[Ss\u017f]"


def _perl_lc(s: str) -> str:
    """Perl's ``lc``: Python's lower() but without the final-sigma rule."""
    if s.isascii():
        return s.lower()
    return s.replace("\u03a3", "\u03c3").lower()
