"""Every Python example in the README runs as pasted.

Each block runs in its own interpreter, in a scratch directory, with host names
resolved to 127.0.0.1 where nothing listens: the examples' sites are then
unreachable, so their robots.txt is too, and the gate answers with a decision
instead of sending anything off this machine.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import CHILDREN

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def _run(code: str, tmp_path: Path) -> str:
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        # Host names resolve to loopback and port 9 refuses: no request leaves.
        [sys.executable, "-W", "error", str(CHILDREN / "loopback_runner.py"), "example.py"],
        cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_has_an_example_for_each_client() -> None:
    text = "\n".join(_blocks())
    for needle in ("gate.fetch", "gate.middleware", "gate.crawl", "RobotGateTransport",
                   "RobotGateMiddleware", "RobotsTxt.parse", "SQLiteStore"):
        assert needle in text, needle


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_blocks())))
def test_each_example_runs_as_pasted(index: int, tmp_path: Path) -> None:
    code = _blocks()[index]
    out = _run(code, tmp_path)
    if "RobotsTxt.parse" in code:
        # The comments in the block are the output, line by line.
        expected = [c.strip() for c in re.findall(r"#\s*(\S.*)$", code, re.M)]
        assert out.split("\n")[:-1] == expected
    elif "asyncio.run" in code:
        # Offline, each site's robots.txt is unreachable: the gate refuses and says why.
        assert "skipped" in out or re.fullmatch(r"0 \d+ 0\n", out), out
        assert "unreachable" in out or re.fullmatch(r"0 \d+ 0\n", out), out


def test_the_readme_stays_short_and_speaks_of_the_present() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= 250
    for word in ("used to", " pass ", "passes", "README-figures", "nineteenth", "twenty"):
        assert word not in text, word
