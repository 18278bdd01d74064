"""Page bodies for ``robotgate fetch``: read up to a cap, saved under unique temporary names."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import mimetypes
import os
import re
import secrets
from pathlib import Path
from typing import Any

from ..crawl import Handled
from ..gate.aiohttp_client import read_body
from ..robots.directives import MAX_HEAD_BYTES
from ..urls import split_origin

_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class SaveError(OSError):
    """A body could not be written under ``--save-dir`` (nothing is left behind)."""


def save_name(url: str, content_type: str) -> str:
    """``HOST_PORT/readable-path-HASH.ext``: unique per URL, safe on any file system."""
    origin, rest = split_origin(url)
    host = _UNSAFE_NAME_RE.sub("_", origin.split("://", 1)[1]).strip("._") or "host"
    slug = _UNSAFE_NAME_RE.sub("_", rest.split("#", 1)[0]).strip("._")[:80] or "index"
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    ext = mimetypes.guess_extension(content_type or "") or ""
    if ext and slug.endswith(ext):
        ext = ""
    return os.path.join(host, f"{slug}-{digest}{ext}")


def _write_all(fd: int, body: bytes) -> None:
    view = memoryview(body)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _host_dir(root: Path, host: str) -> int:
    """A descriptor of ``root/host``, made if missing; a symlink there is refused,
    never followed (it could lead anywhere)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(host, 0o777, dir_fd=top)
        try:
            return os.open(host, flags, dir_fd=top)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(root / host):
                raise OSError(errno.ELOOP, f"{root / host} is a symbolic link, "
                                           "not followed") from None
            raise
    finally:
        os.close(top)


def write_atomically(root: Path, name: str, body: bytes) -> Path:
    """Write ``body`` to ``root/name`` (``HOST/FILE``, as :func:`save_name` makes
    it) through a temporary file of its own; returns the path.

    The host directory is opened without following a symlink, and the
    temporary file is created in it with ``O_EXCL | O_NOFOLLOW`` under a
    unique name, so a planted link is never written through and two writers
    never share a name; the file is renamed into place when complete (a link
    there is replaced, not followed) and removed on any failure, so an
    interrupted run never leaves half a file.
    """
    host, _, file = name.partition(os.sep)
    path = root / host / file
    try:
        where = _host_dir(root, host)
    except OSError as exc:
        raise SaveError(exc.errno, f"cannot save {path}: {exc.strerror or exc}") from exc
    try:
        tmp, fd = _temporary(where, file, path)
        try:
            try:
                _write_all(fd, body)
            finally:
                os.close(fd)
            os.replace(tmp, file, src_dir_fd=where, dst_dir_fd=where)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=where)
            if isinstance(exc, OSError):
                raise SaveError(exc.errno,
                                f"cannot save {path}: {exc.strerror or exc}") from exc
            raise
    finally:
        os.close(where)
    return path


def _temporary(where: int, file: str, path: Path) -> tuple[str, int]:
    """A new ``.FILE.RANDOM.part`` in the directory ``where``, and its descriptor."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
             | getattr(os, "O_CLOEXEC", 0))
    for _ in range(100):
        tmp = f".{file}.{secrets.token_hex(4)}.part"
        try:
            # Mode 0666: the user's umask decides, as for any file they create.
            return tmp, os.open(tmp, flags, 0o666, dir_fd=where)
        except FileExistsError:
            continue
        except OSError as exc:
            raise SaveError(exc.errno, f"cannot save {path}: {exc.strerror or exc}") from exc
    raise SaveError(errno.EEXIST, f"cannot save {path}: no free temporary name")


class PageHandler:
    """The handler ``robotgate fetch`` gives ``gate.crawl``: read, maybe save, describe."""

    def __init__(self, max_bytes: int, save_dir: Path | None) -> None:
        self.max_bytes = max_bytes
        self.save_dir = save_dir

    async def __call__(self, url: str, resp: Any) -> Handled:
        """Read the body (up to the cap), save it if asked; no links are followed.
        Its head is handed back for an HTML page's meta tags (the page's directives)."""
        keep = self.save_dir is not None
        head = b"" if keep else await _read_head(resp, min(MAX_HEAD_BYTES, self.max_bytes))
        body, size, truncated = await read_body(resp, self.max_bytes - len(head), keep)
        size += len(head)
        info: dict[str, Any] = {}
        if truncated:
            info["truncated"] = True
        content_type = resp.headers.get("Content-Type")
        info["content_type"] = content_type
        if self.save_dir is not None:
            name = save_name(str(resp.url), resp.content_type)
            path = await asyncio.to_thread(write_atomically, self.save_dir, name, body)
            info["saved"] = str(path)
        return Handled((), bytes=size, info=info, head=body[:MAX_HEAD_BYTES] if keep else head)


async def _read_head(resp: Any, limit: int) -> bytes:
    """The first ``limit`` bytes of a streamed body (fewer if it is shorter)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await resp.content.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
