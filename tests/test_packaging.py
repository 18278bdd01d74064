"""Packaging: the build backend run as pip runs it (in a child process, on a copy of the
tree), with a compiler that cannot build, and the sdist's contents.

The backend needs setuptools>=77 (pyproject.toml's build requirement) and mypy in the
interpreter running the tests (the ``test`` extra has both); without them these tests skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What a build reads: copied into a temporary directory so the tree stays clean.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE",
                "build_backend", "src")


def _setuptools_version() -> tuple[int, ...]:
    try:
        import setuptools
    except ImportError:
        return (0,)
    return tuple(int(part) for part in setuptools.__version__.split(".")[:1])


needs_backend = pytest.mark.skipif(
    _setuptools_version() < (77,),
    reason="the build backend needs setuptools>=77 (pip install -e '.[test]')")


def _copy_build_inputs(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.egg-info", "build")
    into.mkdir()
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=ignore)
        else:
            shutil.copy2(source, into / name)


def _run_backend(tree: Path, hook: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Call the PEP 517 ``hook`` of the backend in ``tree`` as a front end would."""
    code = (
        "import sys\n"
        "sys.path.insert(0, 'build_backend')\n"
        "import robotgate_build\n"
        f"print('BUILT', robotgate_build.{hook}('out'))\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})


def _failing_compiler(tmp_path: Path, real: str | None) -> str:
    """A ``CC`` that compiles the build's probe with ``real`` and fails on anything else
    (``real`` None: fails on everything)."""
    script = tmp_path / "broken-cc"
    probe = f'case "$*" in *robotgate_probe.c*) exec {real} "$@";; esac\n' if real else ""
    script.write_text(f"#!/bin/sh\n{probe}echo 'broken-cc: cannot compile' >&2\nexit 1\n")
    script.chmod(0o755)
    return str(script)


@needs_backend
@pytest.mark.slow
def test_a_compiler_that_cannot_build_gives_a_pure_wheel_with_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("mypyc.build", reason="compiling needs mypy")
    tree = tmp_path / "tree"
    _copy_build_inputs(tree)
    env = {"CC": "/bin/false", "ROBOTGATE_PURE": "", "ROBOTGATE_COMPILE": ""}
    built = _run_backend(tree, "build_wheel", env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "the C compiler cannot build extensions" in built.stderr
    assert "ROBOTGATE_PURE=1" in built.stderr
    [wheel] = (tree / "out").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "robotgate/politeness/servers.py" in names
    assert not [name for name in names if name.endswith((".so", ".pyd"))]


def _real_compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@needs_backend
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the compiler")
def test_a_compiler_failing_on_the_hot_path_ends_in_one_line_naming_the_pure_build(
        tmp_path: Path) -> None:
    pytest.importorskip("mypyc.build", reason="compiling needs mypy")
    real = _real_compiler()
    if real is None:
        pytest.skip("no C compiler for the probe")
    tree = tmp_path / "tree"
    _copy_build_inputs(tree)
    env = {"CC": _failing_compiler(tmp_path, real), "ROBOTGATE_PURE": "",
           "ROBOTGATE_COMPILE": ""}
    built = _run_backend(tree, "build_wheel", env)
    assert built.returncode != 0
    # The build said what it was doing before the long part began.
    assert "robotgate: compiling the hot path (" in built.stderr
    last = built.stderr.strip().splitlines()[-1]
    assert last.startswith("robotgate: compiling the hot path failed")
    assert "ROBOTGATE_PURE=1" in last
    assert "Traceback" not in built.stderr


def test_an_installed_compiled_build_keeps_its_native_code_inside_the_package() -> None:
    """Run against the compiled wheel (CI does): the mypyc modules and their shared library
    live in robotgate/, nothing of robotgate's lands at the top of site-packages."""
    import robotgate
    from robotgate.compiled import compiled_modules

    if not compiled_modules():
        pytest.skip("a pure build: nothing compiled to place")
    package = Path(robotgate.__file__).parent
    native = sorted(path.relative_to(package).as_posix() for path in package.rglob("*")
                    if path.suffix in (".so", ".pyd"))
    assert [name for name in native if name.startswith("_hot_path__mypyc.")], native
    # Other mypyc projects (mypy itself, black) keep a hash-named library there: not ours
    # unless it holds robotgate's modules.
    beside = [path.name for path in package.parent.glob("*__mypyc.*")
              if b"robotgate.politeness" in path.read_bytes()]
    assert beside == []


def _tracked(*folders: str) -> set[str]:
    listed = subprocess.run(["git", "ls-files", "--", *folders], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    return {name for name in listed.splitlines() if (ROOT / name).exists()}


@needs_backend
@pytest.mark.slow
def test_the_sdist_holds_the_docs_examples_changelog_and_everything_the_tests_need(
        tmp_path: Path) -> None:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("lists the sdist against git's tracked files")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in _tracked("."):  # a copy of the tree, as a clean clone has it
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    built = _run_backend(tree, "build_sdist", {})
    assert built.returncode == 0, built.stderr[-3000:]
    [sdist] = (tree / "out").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {member.name.split("/", 1)[1] for member in archive.getmembers()
                 if member.isfile()}
    needed = _tracked("docs", "examples", "tests", "testbed", "benchmarks", "src",
                      "build_backend")
    needed |= {"CHANGELOG.md", "README.md", "LICENSE", "pyproject.toml", "setup.py"}
    assert sorted(needed - names) == []
    assert {"tests/conftest.py", "docs/conf.py", "docs/index.md", "CHANGELOG.md",
            "tests/support/__init__.py", "testbed/server.py"} <= names
    assert not [name for name in names
                if "__pycache__" in name or name.endswith((".pyc", ".so", ".sqlite3"))]


@pytest.mark.slow  # a child process each
@pytest.mark.parametrize("module, client, extra", [
    ("robotgate.integrations.httpx", "httpx", "httpx"),
    ("robotgate.integrations.scrapy.middleware", "scrapy", "scrapy"),
    ("robotgate.integrations.scrapy.pointers", "scrapy", "scrapy"),
    ("robotgate.integrations.scrapy.resolver", "twisted", "scrapy"),
    ("robotgate.integrations.playwright", "playwright", "playwright"),
    ("robotgate.integrations.crawlee", "crawlee", "crawlee"),
    ("robotgate.integrations.crawl4ai", "crawl4ai", "crawl4ai"),
])
def test_an_integration_without_its_client_names_the_extra(module: str, client: str,
                                                           extra: str) -> None:
    # The client made unimportable, as where it is not installed (a None in sys.modules).
    code = f"import sys; sys.modules[{client!r}] = None; import {module}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1
    assert last.startswith(f"ImportError: {module} needs "), last
    assert last.endswith(f": pip install 'robotgate[{extra}]'"), last
