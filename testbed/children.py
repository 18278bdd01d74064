"""The environment of a child Python process that tests and benchmarks start."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def child_env(robotgate_src: Path | None = SRC) -> dict[str, str]:
    """This environment, with ``robotgate_src`` (this checkout's ``src/`` unless told; None:
    the installed robotgate) and the checkout (``testbed``, ``tests``, ``benchmarks``) first on
    the child's path, so it imports the same code whether or not robotgate is installed."""
    env = dict(os.environ)
    first = [str(robotgate_src)] if robotgate_src is not None else []
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (*first, str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env
