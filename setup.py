"""Build: the hot path compiled with mypyc where a C compiler is at hand.

Everything else is in pyproject.toml.  Which modules, and how to turn the
compiled build on or off, is documented in src/robotgate/compiled.py.  A
build that means to compile and cannot (mypyc missing, a module that does not
compile) fails and says so in one line naming ROBOTGATE_PURE=1; a machine with
no C compiler, or one that cannot build an extension (tried on a probe first:
``CC=/bin/false``, no Python headers), gets a pure build with a warning.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import shutil
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PURE_HINT = "set ROBOTGATE_PURE=1 to build the pure-Python package instead"
#: The compiled modules' shared library, as a module of the package.
HOT_PATH_LIBRARY = "robotgate._hot_path"


def _has_c_compiler() -> bool:
    configured = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return any(shutil.which(name) for name in (configured, "cc", "gcc", "clang", "cl"))


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """The compiler's stdout and stderr (child processes included) into ``path``."""
    saved = [os.dup(1), os.dup(2)]
    sys.stdout.flush()
    sys.stderr.flush()
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _short(message: str, most: int = 200) -> str:
    """A compiler's message on one line of at most ``most`` characters (a command line
    with every flag would bury the hint after it)."""
    line = " ".join(message.split())
    return line if len(line) <= most else line[:most - 3] + "..."


def compiler_trouble() -> str | None:
    """Why the C compiler cannot build an extension (None: it can), from compiling a probe
    that includes Python.h as the extensions do."""
    # setuptools' own copy of distutils (the standard library's is gone from 3.12 on).
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch, "robotgate_probe.c")
        probe.write_text("#include <Python.h>\nint robotgate_probe(void) { return 0; }\n")
        output = Path(scratch, "output.txt")
        compiler = new_compiler()
        customize_compiler(compiler)
        try:
            with _output_to(output):
                compiler.compile([str(probe)], output_dir=scratch,
                                 include_dirs=[sysconfig.get_paths()["include"]])
        except Exception as error:  # whatever stops the probe stops the build
            said = output.read_text(errors="replace").strip().splitlines()
            return _short(said[0] if said else str(error))
    return None


class BuildHotPath(build_ext):
    """build_ext whose failure ends in one line naming the pure build, after the
    compiler's own output."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:
            # The compiler's and linker's errors, whichever copy of distutils raised them.
            if "distutils" not in type(error).__module__:
                raise
            raise SystemExit(f"robotgate: compiling the hot path failed ({_short(str(error))}); "
                             f"{PURE_HINT}") from None


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
    trouble = compiler_trouble()
    if trouble is not None:
        warnings.warn(f"robotgate: the C compiler cannot build extensions ({trouble}), "
                      f"building pure Python ({PURE_HINT} to silence this)", stacklevel=1)
        return []
    hot = runpy.run_path(str(HERE / "src" / "robotgate" / "compiled.py"))["HOT_PATH"]
    paths = ["src/" + name.replace(".", "/") + ".py" for name in hot]
    # pip shows this with -v (pip -q hides a build's output): a long build says why.
    print(f"robotgate: compiling the hot path ({len(paths)} modules) with mypyc, then C: "
          f"about two minutes on 2 cores; {PURE_HINT}", file=sys.stderr, flush=True)
    # The build runs without the runtime dependencies (aiohttp, redis...): their types
    # are unknown there, and the strict checks (mypy --strict src, in CI) stay out.
    flags = ["--config-file=", "--ignore-missing-imports"]
    # The shared library the compiled modules load goes inside the package
    # (robotgate/_hot_path__mypyc.*), not at the top of site-packages under a hash.
    extensions: list[Extension] = mypycify([*flags, *paths], opt_level="3",
                                           group_name=HOT_PATH_LIBRARY)
    return extensions


setup(ext_modules=hot_path_extensions(), cmdclass={"build_ext": BuildHotPath})
