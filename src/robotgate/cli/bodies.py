"""Page bodies for ``robotgate fetch``: read up to a cap, saved under unique temporary names."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import mimetypes
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..gate.aiohttp_client import read_body
from ..politeness.frontier import Handled
from ..urls import split_origin

_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


def _read_umask() -> int:
    # Read once, at import (in the main thread): os.umask can only be read by setting it.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_read_umask()


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


def write_atomically(path: Path, body: bytes) -> None:
    """Write ``body`` to ``path`` through a temporary file of its own.

    The temporary name is unique (``mkstemp``: created with ``O_EXCL``, never
    following a symlink), so two writers never share one, and a planted link
    is never written through; the file is renamed into place when complete
    and removed on any failure, so an interrupted run never leaves half a file.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise SaveError(exc.errno, f"cannot save {path}: {exc.strerror or exc}") from exc
    try:
        try:
            os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; the user's umask decides
            _write_all(fd, body)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise SaveError(exc.errno, f"cannot save {path}: {exc.strerror or exc}") from exc
        raise


class PageHandler:
    """The handler ``robotgate fetch`` gives ``gate.crawl``: read, maybe save, describe."""

    def __init__(self, max_bytes: int, save_dir: Path | None) -> None:
        self.max_bytes = max_bytes
        self.save_dir = save_dir

    async def __call__(self, url: str, resp: Any) -> Handled:
        """Read the body (up to the cap), save it if asked; no links are followed."""
        keep = self.save_dir is not None
        body, size, truncated = await read_body(resp, self.max_bytes, keep)
        info: dict[str, Any] = {}
        if truncated:
            info["truncated"] = True
        content_type = resp.headers.get("Content-Type")
        info["content_type"] = content_type
        if self.save_dir is not None:
            path = self.save_dir / save_name(str(resp.url), resp.content_type)
            await asyncio.to_thread(write_atomically, path, body)
            info["saved"] = str(path)
        return Handled((), bytes=size, info=info)
