"""``robotgate demo`` shows, in one command and on loopback only, the gate's three promises."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import _env

pytestmark = pytest.mark.slow


async def test_demo_shows_robots_once_skips_with_reasons_and_pacing(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "robotgate", "demo", "--quick",
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    out_b, err_b = await asyncio.wait_for(proc.communicate(), 60)
    out, err = out_b.decode(), err_b.decode()
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err
    hosts = int(re.search(r"robotgate demo: (\d+) hosts on 127\.0\.", out).group(1))  # type: ignore[union-attr]
    assert hosts == 14
    # Promise 1, 2 and 3, as the servers measured them.
    assert f"ok     robots.txt fetched once per host: {hosts} requests for {hosts} hosts" in out
    assert "ok     no disallowed URL fetched: 0 requests for paths robots.txt forbids" in out
    assert "ok     no host asked faster than its interval" in out
    assert "FAILED" not in out
    # Skips come with their reasons: a rule and its line, or the robots.txt outcome.
    assert re.search(r"\d+ x disallowed by 'Disallow: /private/' \(line \d\)", out)
    assert re.search(r"\d+ x robots.txt answered 503", out)
    assert "skipped origins" in out
    assert out.count("max_crawl_delay 1 s: the demo lowers it from the 60 s default") == 2
    # The crawl followed links, retried the 429, and the table shows each kind of host.
    found = re.search(r"(\d+) URLs found in pages, (\d+) retried after a 429", out)
    assert found and int(found.group(1)) > 0 and int(found.group(2)) >= 1
    for kind in ("open", "private", "slow", "down", "busy", "none", "greedy"):
        assert re.search(rf"^{kind}: ", out, re.MULTILINE), kind
    slow = re.search(r"^slow: .* (\d\.\d+)s +(\d\.\d+|0\.25)s$", out, re.MULTILINE)
    assert slow and float(slow.group(1)) >= 0.25 - 0.001
