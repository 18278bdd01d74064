"""Two processes opening one new SQLite store at the same moment (store/sqlite_schema.py's
``create_new``): neither takes the other's half-made file for a truncated store."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from robotgate.store.sqlite import SCHEMA_VERSION, SQLiteStore
from testbed.children import SRC, child_env
from tests.support import CHILDREN

TRIALS = 40


async def open_at_once(tmp_path: Path, trials: int, src: Path = SRC) -> list[dict[str, object]]:
    """Two opener processes, each told the same new path at the same moment, ``trials``
    times; their answers."""
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-W", "error", str(CHILDREN / "sqlite_opener.py"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=child_env(src))
        for _ in range(2)
    ]
    answers = []
    try:
        for child in children:
            assert child.stdout is not None
            assert await asyncio.wait_for(child.stdout.readline(), 30) == b"ready\n"
        for trial in range(trials):
            line = f"{tmp_path / f'store-{trial}.sqlite3'}\n".encode()
            for child in children:
                assert child.stdin is not None
                child.stdin.write(line)
            for child in children:
                assert child.stdout is not None and child.stdin is not None
                await child.stdin.drain()
                answers.append(json.loads(await asyncio.wait_for(child.stdout.readline(), 30)))
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            if child.returncode is None:
                child.kill()
            await child.wait()
    return answers


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
async def test_two_processes_opening_a_new_file_at_once_never_warn(tmp_path: Path) -> None:
    answers = await open_at_once(tmp_path, TRIALS)
    assert len(answers) == 2 * TRIALS
    assert [a for a in answers if a["warnings"] or a["error"]] == []
    for trial in range(TRIALS):
        conn = sqlite3.connect(tmp_path / f"store-{trial}.sqlite3")
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
                str(SCHEMA_VERSION),)
        finally:
            conn.close()
    # No temporary file is left beside the stores.
    assert sorted(p.name for p in tmp_path.iterdir() if "store-" not in p.name) == []


async def test_a_new_store_appears_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    async with SQLiteStore(path) as store:
        assert store.unrecorded_until == 0.0  # new: no pacing was lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.sqlite3"]


async def test_an_existing_empty_file_is_still_taken_for_a_truncated_store(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "touched.sqlite3"
    path.touch()
    async with SQLiteStore(path) as store:
        assert store.unrecorded_until > 0
    assert "was an empty (0-byte) file" in caplog.text
