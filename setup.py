"""Build: the hot path compiled with mypyc where a C compiler is at hand.

Everything else is in pyproject.toml.  Which modules, and how to turn the
compiled build on or off, is documented in src/robotgate/compiled.py.  A
build that means to compile and cannot (mypyc missing, a module that does not
compile) fails and says so; only a machine with no C compiler at all gets a
pure build without being asked, with a warning.
"""

from __future__ import annotations

import os
import runpy
import shutil
import sys
import sysconfig
import warnings
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
PURE_HINT = "set ROBOTGATE_PURE=1 to build the pure-Python package instead"


def _has_c_compiler() -> bool:
    configured = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return any(shutil.which(name) for name in (configured, "cc", "gcc", "clang", "cl"))


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
    if not _has_c_compiler():
        warnings.warn(f"robotgate: no C compiler found, building pure Python ({PURE_HINT} "
                      "to silence this)", stacklevel=1)
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as missing:
        raise SystemExit(f"robotgate: compiling the hot path needs mypy ({missing}); "
                         f"{PURE_HINT}") from None
    hot = runpy.run_path(str(HERE / "src" / "robotgate" / "compiled.py"))["HOT_PATH"]
    paths = ["src/" + name.replace(".", "/") + ".py" for name in hot]
    # The build runs without the runtime dependencies (aiohttp, redis...): their types
    # are unknown there, and the strict checks (mypy --strict src, in CI) stay out.
    flags = ["--config-file=", "--ignore-missing-imports"]
    extensions: list[Extension] = mypycify([*flags, *paths], opt_level="3")
    return extensions


setup(ext_modules=hot_path_extensions())
