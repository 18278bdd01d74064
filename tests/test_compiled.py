"""The compiled build: which modules it compiles, and that CI tests the build it means to."""

from __future__ import annotations

import ast
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


def test_the_hot_path_has_no_raise_from_none() -> None:
    # mypyc ignores ``from None``: compiled, such a raise would chain the error it hides
    # (gate.fetch's InvalidURL would carry the client's error, password and all).
    for name in HOT_PATH:
        tree = ast.parse((ROOT / "src" / (name.replace(".", "/") + ".py")).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.cause, ast.Constant):
                pytest.fail(f"{name}, line {node.lineno}: raise ... from None, compiled")


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


@pytest.mark.slow
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


def _backend() -> dict[str, object]:
    return runpy.run_path(str(ROOT / "build_backend" / "robotgate_build.py"))


@pytest.mark.slow
def test_the_build_asks_for_mypy_only_when_it_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    from setuptools import build_meta

    for hook in ("get_requires_for_build_wheel", "get_requires_for_build_editable"):
        monkeypatch.setattr(build_meta, hook, lambda config_settings=None: ["setuptools"])
    monkeypatch.delenv("ROBOTGATE_PURE", raising=False)
    monkeypatch.delenv("ROBOTGATE_COMPILE", raising=False)
    backend = _backend()
    wheel, editable = (backend["get_requires_for_build_wheel"],
                       backend["get_requires_for_build_editable"])
    assert any(req.startswith("mypy==") for req in wheel())  # type: ignore[operator]
    assert not any(req.startswith("mypy") for req in editable())  # type: ignore[operator]
    monkeypatch.setenv("ROBOTGATE_COMPILE", "1")
    assert any(req.startswith("mypy==") for req in editable())  # type: ignore[operator]
    monkeypatch.setenv("ROBOTGATE_PURE", "1")
    assert not any(req.startswith("mypy") for req in wheel())  # type: ignore[operator]


def test_a_build_that_cannot_compile_fails_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import setuptools

    monkeypatch.setattr(setuptools, "setup", lambda **kw: None)
    monkeypatch.delenv("ROBOTGATE_PURE", raising=False)
    monkeypatch.setattr("sys.argv", ["setup.py", "bdist_wheel"])
    monkeypatch.setitem(sys.modules, "mypyc.build", None)  # as if mypy were not installed
    monkeypatch.setenv("CC", sys.executable)  # a "compiler" that exists, so compiling is meant
    with pytest.raises(SystemExit, match="ROBOTGATE_PURE=1"):
        runpy.run_path(str(ROOT / "setup.py"))
