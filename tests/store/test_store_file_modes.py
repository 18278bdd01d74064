"""What robotgate creates on disk holds the URLs it was given as given (a password, a
token in a query: docs/secrets.md), so it is its owner's only: the SQLite store and its
write-ahead log 0600, a directory made for it 0700, ``robotgate fetch --out`` 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotgate.records import HostState
from robotgate.store.from_text import store_from_text
from robotgate.store.sqlite import SQLiteStore
from robotgate.store.sqlite_schema import create_owner_only

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The usual umask (022): what others may read unless robotgate says otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_new_store_file_and_its_log_are_its_owners_only(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    store = SQLiteStore(path)
    await store.open()
    try:
        await store.save_host(HostState("http://a.example", visits=1))
        made = [p for p in tmp_path.iterdir() if p.name.startswith("crawl.sqlite3")]
        assert path in made and len(made) >= 2, made  # the file, its -wal (and -shm)
        assert {p.name: mode(p) for p in made} == {p.name: 0o600 for p in made}
    finally:
        await store.close()
    assert mode(path) == 0o600


def test_a_store_made_in_place_is_its_owners_only(tmp_path: Path) -> None:
    """Where no link can put a whole store into place, it is made in place."""
    path = tmp_path / "in-place.sqlite3"
    assert create_owner_only(str(path)) is True
    assert mode(path) == 0o600 and path.stat().st_size == 0
    assert create_owner_only(str(path)) is False  # one is there: left as it is


def test_the_directory_made_for_a_store_is_its_owners_only(tmp_path: Path) -> None:
    store = store_from_text(f"sqlite:{tmp_path / 'new' / 'store.sqlite3'}")
    assert isinstance(store, SQLiteStore)
    assert mode(tmp_path / "new") == 0o700
