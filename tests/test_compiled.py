"""The compiled build: which modules it compiles, and that CI tests the build it means to."""

from __future__ import annotations

import importlib
import os
import runpy
from pathlib import Path

import pytest

from robotgate.compiled import HOT_PATH, compiled_modules

ROOT = Path(__file__).resolve().parent.parent


def test_the_hot_path_names_modules_that_exist_as_sources() -> None:
    for name in HOT_PATH:
        assert (ROOT / "src" / (name.replace(".", "/") + ".py")).is_file(), name
        assert importlib.import_module(name).__name__ == name


def test_compiled_modules_are_those_loaded_from_native_code() -> None:
    native = [name for name in HOT_PATH
              if not str(importlib.import_module(name).__file__).endswith(".py")]
    assert compiled_modules() == native


@pytest.mark.skipif("ROBOTGATE_EXPECT_COMPILED" not in os.environ,
                    reason="CI says which build it installed")
def test_ci_runs_the_build_it_installed() -> None:
    # Without this, a compiler failure would silently test the pure modules twice.
    expected = list(HOT_PATH) if os.environ["ROBOTGATE_EXPECT_COMPILED"] == "1" else []
    assert compiled_modules() == expected


def test_setup_compiles_nothing_for_an_editable_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import setuptools

    seen: list[object] = []
    monkeypatch.setattr(setuptools, "setup", lambda **kw: seen.append(kw["ext_modules"]))
    monkeypatch.delenv("ROBOTGATE_COMPILE", raising=False)
    monkeypatch.delenv("ROBOTGATE_PURE", raising=False)
    monkeypatch.setattr("sys.argv", ["setup.py", "editable_wheel"])
    runpy.run_path(str(ROOT / "setup.py"))
    monkeypatch.setenv("ROBOTGATE_PURE", "1")
    monkeypatch.setattr("sys.argv", ["setup.py", "bdist_wheel"])
    runpy.run_path(str(ROOT / "setup.py"))
    assert seen == [[], []]
