"""Build: the hot path compiled with mypyc where a C compiler is at hand.

Everything else is in pyproject.toml.  Which modules, and how to turn the
compiled build on or off, is documented in src/robotgate/compiled.py.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent


def hot_path_extensions() -> list[Extension]:
    if os.environ.get("ROBOTGATE_PURE") == "1":
        return []
    # An editable install builds extensions in place, where they would shadow
    # the sources being edited: it stays pure unless asked.
    if "editable_wheel" in sys.argv and os.environ.get("ROBOTGATE_COMPILE") != "1":
        return []
    if not any(cmd in sys.argv for cmd in ("bdist_wheel", "editable_wheel", "build_ext",
                                           "build", "install")):
        return []  # metadata, sdist: nothing to compile
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    hot = runpy.run_path(str(HERE / "src" / "robotgate" / "compiled.py"))["HOT_PATH"]
    paths = ["src/" + name.replace(".", "/") + ".py" for name in hot]
    # The build runs without the runtime dependencies (aiohttp, redis...): their types
    # are unknown there, and the strict checks (mypy --strict src, in CI) stay out.
    flags = ["--config-file=", "--ignore-missing-imports"]
    extensions: list[Extension] = mypycify([*flags, *paths], opt_level="3")
    for ext in extensions:
        ext.optional = True  # no C compiler: the pure modules serve
    return extensions


setup(ext_modules=hot_path_extensions())
