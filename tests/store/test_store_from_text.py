"""One reading of a store's text: ``robotgate fetch --store`` and Scrapy's
``ROBOTGATE_STORE`` make the same store of the same text, and refuse bad text alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from robotgate.cli.args import UsageError
from robotgate.cli.fetch import make_store as cli_store
from robotgate.integrations.scrapy.settings import make_store as scrapy_store
from robotgate.store.base import Store


def same(store: Store) -> tuple[str, str]:
    """What a store is, to compare: its class and its account of itself."""
    return type(store).__name__, repr(store) if type(store).__name__ != "MemoryStore" else ""


@pytest.mark.parametrize("text", [
    "memory",
    " memory ",
    "sqlite:TMP/a/robots.db",
    "TMP/b/robots.db",
    "redis://127.0.0.1:6379/0",
    "redis+cluster://127.0.0.1:7000",
    "unix:///tmp/redis.sock",
])
def test_the_cli_and_scrapy_make_the_same_store_of_the_same_text(text: str,
                                                                  tmp_path: Path) -> None:
    text = text.replace("TMP", str(tmp_path))
    assert same(cli_store(text)) == same(scrapy_store(text))


def test_a_bare_path_and_sqlite_path_are_one_sqlite_file(tmp_path: Path) -> None:
    assert same(cli_store(str(tmp_path / "x.db"))) == same(scrapy_store(f"sqlite:{tmp_path}/x.db"))
    assert type(cli_store(str(tmp_path / "x.db"))).__name__ == "SQLiteStore"


@pytest.mark.parametrize("text, said", [
    ("mongo://x", "unknown store 'mongo://x'"),
    ("mongo://user:hunter2@x", "unknown store 'mongo://user:***@x'"),
])
def test_the_cli_and_scrapy_refuse_bad_text_alike(text: str, said: str) -> None:
    with pytest.raises(ValueError) as scrapy:
        scrapy_store(text)
    with pytest.raises(UsageError) as cli:
        cli_store(text)
    assert said in str(scrapy.value)
    assert str(cli.value) == f"{scrapy.value} (pick another with --store)"
    assert "hunter2" not in str(scrapy.value) + str(cli.value)


@pytest.mark.parametrize("text", ["", "sqlite:"])
def test_no_path_is_the_clis_default_file_and_an_error_in_scrapy(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(ValueError, match="give memory, a SQLite path"):
        scrapy_store(text)
    assert repr(cli_store(text)) == repr(cli_store(None))
    assert (tmp_path / "robotgate").is_dir()


def test_a_directory_that_cannot_be_made_is_refused_alike(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    text = f"sqlite:{blocker}/sub/robots.db"
    with pytest.raises(ValueError) as scrapy:
        scrapy_store(text)
    with pytest.raises(UsageError) as cli:
        cli_store(text)
    assert "cannot create" in str(scrapy.value)
    assert str(cli.value) == f"{scrapy.value} (pick another with --store)"
