"""A throwaway ``redis-server`` on a free loopback port, for the tests.

Not a test module: ``conftest.py`` starts one per session (``redis_url``) and
the fault tests start their own, to stop and restart it.

>>> with RedisServer.start(tmp_dir) as server:  # doctest: +SKIP
...     server.url
'redis://127.0.0.1:41234/0'
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["MISSING_REASON", "RedisServer", "find_redis_server"]

MISSING_REASON = "redis-server not found: install the Debian package redis-server"

# Bounds on waiting for the server to come up or go down (seconds).
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0


def find_redis_server() -> str | None:
    """The redis-server binary: ``$ROBOTGATE_REDIS_SERVER``, then ``PATH``, then /usr/bin."""
    candidates = [os.environ.get("ROBOTGATE_REDIS_SERVER"), shutil.which("redis-server")]
    candidates.append("/usr/bin/redis-server")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ping(port: int, timeout: float = 0.5) -> bool:
    """True when a Redis server answers PING on the port (plain socket, no client)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process: no persistence, loopback only, in its own directory."""

    def __init__(self, binary: str, directory: Path, port: int) -> None:
        self.binary = binary
        self.directory = directory
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self._log = directory / "redis.log"
        self._owns_directory = False

    @classmethod
    def start(cls, directory: Path | None = None, binary: str | None = None) -> RedisServer:
        """Start a server on a free port (a few tries, in case a port gets taken)."""
        binary = binary or find_redis_server()
        if binary is None:
            raise FileNotFoundError(MISSING_REASON)
        owns = directory is None
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="robotgate-redis-"))
        last: Exception | None = None
        for _ in range(3):
            server = cls(binary, directory, free_port())
            server._owns_directory = owns
            try:
                server.resume()
                return server
            except RuntimeError as exc:
                last = exc
        if owns:
            shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"could not start redis-server: {last}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def resume(self) -> None:
        """Start the server (again) on the same port; returns once it answers PING."""
        if self.running:
            return
        log = self._log.open("ab")
        try:
            self.process = subprocess.Popen(
                [self.binary, *self._options()],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.directory,
            )
        finally:
            log.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while not ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self._log.read_text(errors="replace")[-800:]
                raise RuntimeError(f"redis-server on port {self.port} did not start:\n{tail}")
            time.sleep(0.02)

    def _options(self) -> list[str]:
        options = {
            "port": str(self.port),
            "bind": "127.0.0.1",
            "save": "",  # nothing on disk: a restart comes back empty
            "appendonly": "no",
            "daemonize": "no",
            "dir": str(self.directory),
        }
        return [part for name, value in options.items() for part in (f"--{name}", value)]

    def stop(self, kill: bool = False) -> None:
        """Stop the server (SIGTERM, or SIGKILL with ``kill``) and wait for it to exit."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                process.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(_STOP_TIMEOUT)
        else:
            process.wait()

    def restart(self) -> None:
        self.stop()
        self.resume()

    def close(self) -> None:
        """Stop the server and remove its directory if this helper made it."""
        self.stop()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
