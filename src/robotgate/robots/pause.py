"""A pause in long compiled work, so that a thread waiting for the GIL gets it.

The interpreter hands the GIL to a waiting thread every 5 ms on its own; code compiled by
mypyc never does (it runs no interpreter loop).  So a long robots.txt parsed aside in a
worker thread, in the compiled build, would hold the event loop's thread still for the
whole parse and compile (0.35 s measured at load, benchmarks/README.md "Stalls").  The
parse and the compiling of a large group pause between their steps.
"""

from __future__ import annotations

import time

__all__ = ["PAUSE_OVER", "pause"]

#: Work on more items than this (lines, rules) pauses between its steps: about a
#: millisecond of compiled work.  Smaller work never pauses.
PAUSE_OVER = 2048


def pause() -> None:
    """Let another thread take the GIL, if one is waiting for it."""
    time.sleep(0)  # releases the GIL; a thread that has asked for it takes it
