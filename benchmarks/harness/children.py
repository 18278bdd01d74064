"""Child processes: a benchmark runs itself in a fresh process per measured run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testbed.children import child_env
from testbed.server import stop_process


async def child_json(script: Path, args: Sequence[str], timeout: float,
                     src: Path | None = None, wrap: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``script ARGS`` in a child (under ``wrap``, e.g. valgrind); its last stdout line,
    or ``{"error": ...}``.  With ``src`` the child runs that tree's robotgate, else this
    install's (compiled or not)."""
    proc = await asyncio.create_subprocess_exec(
        *wrap, sys.executable, str(script), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env(src))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        await stop_process(proc)
        return {"error": f"{args[0]} timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        return {"error": f"{args[0]} exited {proc.returncode}: {' | '.join(tail)}"}
    data: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return data


def raise_nofile() -> None:
    """Open files up to the hard limit: thousands of loopback connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
