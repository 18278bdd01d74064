"""``robotgate fetch`` and ``check`` (issue 53 §4): a store that fails on close, a
symlinked host directory under ``--save-dir``, a token in a URL's user information."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robotgate.cli.fetch
from robotgate.cli.bodies import save_name
from robotgate.store.base import StoreError
from robotgate.store.memory import MemoryStore
from tests.cli.test_cli import AGENT, json_lines, run_async
from tests.support.hostile import HostileServer

FETCH = ["fetch", "-a", AGENT, "--store", "memory", "--delay", "0", "-q"]


class _FullDisk(MemoryStore):
    """A store whose last write, on close, fails as a full disk does."""

    async def close(self) -> None:
        raise StoreError("cannot write host state to /tmp/state.sqlite3: database or disk is full")


async def test_a_store_failing_on_close_ends_in_a_message_and_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(robotgate.cli.fetch, "make_store", lambda spec: _FullDisk())
    async with HostileServer() as srv:
        code, out, err = await run_async([*FETCH, srv.url("/page/1")], capsys)
    assert "Traceback" not in err
    assert code == 1
    (record,) = json_lines(out)
    assert record["status"] == 200  # the page's line stands
    assert err.startswith("robotgate: error: the store could not save its last writes on close")
    assert "database or disk is full" in err


async def test_a_symlinked_host_directory_is_never_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    saved.mkdir()
    async with HostileServer() as srv:
        url = srv.url("/page/3")
        host = saved / save_name(url, "text/html").split("/")[0]
        host.symlink_to(elsewhere, target_is_directory=True)
        code, out, _ = await run_async([*FETCH, "--save-dir", str(saved), url], capsys)
    (record,) = json_lines(out)
    assert code == 1 and "saved" not in record
    assert record["status"] == 200 and "is a symbolic link" in str(record["error"])
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert host.is_symlink()


async def test_a_dangling_symlinked_host_directory_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved"
    saved.mkdir()
    missing = tmp_path / "not-yet"
    async with HostileServer() as srv:
        url = srv.url("/page/4")
        host = saved / save_name(url, "text/html").split("/")[0]
        host.symlink_to(missing, target_is_directory=True)
        code, out, _ = await run_async([*FETCH, "--save-dir", str(saved), url], capsys)
    (record,) = json_lines(out)
    assert code == 1 and "saved" not in record
    assert not missing.exists()


async def test_a_token_as_user_information_is_never_said_and_the_lines_keep_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """stderr and ``check``'s output say no token; fetch's JSON lines return each URL as
    given, so that it can be matched to its input and fetched again (docs/secrets.md)."""
    token = "ghp_t0k3nXYZ"
    async with HostileServer() as srv:
        base = f"http://{token}@127.0.0.1:{srv.port}"
        code, out, err = await run_async(
            ["fetch", "-a", AGENT, "--store", "memory", "--delay", "0",
             base + "/page/1", base + "/private/2", f"http://{token}@127.0.0.1:1/x",
             f"http://{token}@[bad/"], capsys,
        )
        check_code, check_out, check_err = await run_async(
            ["check", srv.url("/robots.txt"), base + "/private/2", base + "/page/1"], capsys
        )
        json_code, json_out, json_err = await run_async(
            ["check", srv.url("/robots.txt"), base + "/private/2", "--json"], capsys
        )
    assert code == 2 and check_code == 1 and json_code == 1
    for text in (err, check_out, check_err, json_out, json_err):
        assert token not in text
    urls = {str(r["url"]) for r in json_lines(out)}
    assert urls == {base + "/page/1", base + "/private/2", f"http://{token}@127.0.0.1:1/x",
                    f"http://{token}@[bad/"}
    for record in json_lines(out):  # what robotgate says in a line: no token
        assert token not in json.dumps({k: v for k, v in record.items()
                                        if k not in ("url", "final_url")}), record
    assert json_lines(json_out)[0]["url"] == f"http://***@127.0.0.1:{srv.port}/private/2"
