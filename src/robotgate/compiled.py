"""Which of robotgate's modules run as compiled code in this installation.

A normal install (``pip install robotgate`` or ``pip install .``) compiles the
modules in :data:`HOT_PATH` with mypyc where a C compiler is at hand: they run
on every page a gate admits.  An editable install (``pip install -e .``) keeps
them as Python, so that edits take effect, unless ``ROBOTGATE_COMPILE=1`` is set;
``ROBOTGATE_PURE=1`` keeps any install pure.  Both builds pass the same tests.
This module is standard library only: ``setup.py`` reads the list from it.
"""

from __future__ import annotations

import importlib.util

__all__ = ["HOT_PATH", "compiled_modules"]

#: The modules a compiled build compiles: the per-page verdict, exchange, turn and pacing, and
#: the RFC 9309 parser with its matcher and the explanations of its verdicts,
#: whose query every page asks; and the reader of a page's directives (X-Robots-Tag,
#: robots meta tags), which every page whose directives are used runs.  Each is here
#: because it compiles as written and compiling it saves more than 1% of the
#: instructions of a page or of a cached decision (benchmarks/README.md, "What
#: compiling each module buys").
#: The aiohttp adapter stays Python: mypyc ignores ``raise ... from None``,
#: and its errors must not carry the client's error (it may show a password);
#: so does the robots.txt fetch's driver, which runs once per site.
HOT_PATH = (
    "robotgate.policy.site",
    "robotgate.politeness.exchange",
    "robotgate.politeness.request_turn",
    "robotgate.politeness.scheduler",
    "robotgate.politeness.servers",
    "robotgate.politeness.verdicts",
    "robotgate.robots.decider",
    "robotgate.robots.directives",
    "robotgate.robots.patterns",
    "robotgate.robots.rfc9309",
)


def compiled_modules() -> list[str]:
    """The modules of :data:`HOT_PATH` that load as compiled code here.

    >>> set(compiled_modules()) <= set(HOT_PATH)
    True
    """
    out = []
    for name in HOT_PATH:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None and not spec.origin.endswith(".py"):
            out.append(name)
    return out
