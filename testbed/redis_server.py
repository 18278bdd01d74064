"""Throwaway ``redis-server`` processes on free loopback ports, for the tests.

Not a test module: ``conftest.py`` starts one server per session
(``redis_url``) and one 3-master Redis Cluster (``redis_cluster``); the
fault tests start their own, to stop, kill and restart them.

>>> with RedisServer.start(tmp_dir) as server:  # doctest: +SKIP
...     server.url
'redis://127.0.0.1:41234/0'
>>> with LocalCluster.start(tmp_dir, masters=3) as cluster:  # doctest: +SKIP
...     cluster.url
'redis://127.0.0.1:41235/0'
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["MISSING_REASON", "LocalCluster", "RedisServer", "find_redis_server"]

MISSING_REASON = "redis-server not found: install the Debian package redis-server"

# Bounds on waiting for the server to come up or go down (seconds).
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0

_T = TypeVar("_T")


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


def cluster_port() -> int:
    """A free port for a cluster node: at most 55535, and its bus port (+10000) free too."""
    while True:
        port = free_port()
        if port > 55535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def ping(port: int, timeout: float = 0.5) -> bool:
    """True when a Redis server answers PING on the port (plain socket, no client)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _until(probe: Callable[[], _T], timeout: float) -> _T:
    """``probe()``'s first true answer, asked every 50 ms; its last one after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


class RedisServer:
    """One redis-server process: no persistence, loopback only, in its own directory."""

    def __init__(
        self, binary: str, directory: Path, port: int, extra: Sequence[str] = ()
    ) -> None:
        self.binary = binary
        self.directory = directory
        self.port = port
        #: More command-line options (``--name value`` pairs), after the defaults.
        self.extra = list(extra)
        self.process: subprocess.Popen[bytes] | None = None
        self._log = directory / "redis.log"
        self._owns_directory = False

    @classmethod
    def start(
        cls,
        directory: Path | None = None,
        binary: str | None = None,
        extra: Sequence[str] = (),
        pick_port: Callable[[], int] = free_port,
    ) -> RedisServer:
        """Start a server on a free port (a few tries, in case a port gets taken)."""
        binary = binary or find_redis_server()
        if binary is None:
            raise FileNotFoundError(MISSING_REASON)
        owns = directory is None
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="robotgate-redis-"))
        last: Exception | None = None
        for _ in range(3):
            server = cls(binary, directory, pick_port(), extra)
            server._owns_directory = owns
            try:
                server.resume()
                return server
            except RuntimeError as exc:
                last = exc
        if owns:
            shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"could not start redis-server: {last}")

    #: Every server here listens on loopback only.
    host = "127.0.0.1"

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
        parts = [part for name, value in options.items() for part in (f"--{name}", value)]
        return parts + self.extra

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


# -- Redis Cluster ------------------------------------------------------------

_SLOTS = 16384


def _client(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=5)


class LocalCluster:
    """A Redis Cluster of ``redis-server`` processes on loopback, one directory each.

    Built by hand (``CLUSTER ADDSLOTSRANGE``, ``CLUSTER MEET``, ``CLUSTER
    REPLICATE``), so no ``redis-cli`` is needed.  The slots are split evenly
    over the masters; replica ``i`` follows master ``i``.  Each node keeps its
    ``nodes.conf`` in its directory, so a stopped node started again rejoins
    with its identity and slots.  With ``persistent`` every write is in an
    append-only file (fsync always): a restarted master comes back with its data.
    """

    def __init__(self, directory: Path, nodes: list[RedisServer], masters: int) -> None:
        self.directory = directory
        self.nodes = nodes
        self.masters = masters

    @classmethod
    def start(
        cls,
        directory: Path,
        *,
        masters: int = 3,
        replicas: int = 0,
        node_timeout_ms: int = 2000,
        persistent: bool = False,
    ) -> LocalCluster:
        """Start ``masters + replicas`` nodes and join them; returns once the cluster is ok."""
        options = [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout_ms),
        ]
        if persistent:
            options += ["--appendonly", "yes", "--appendfsync", "always"]
        nodes: list[RedisServer] = []
        cluster = cls(directory, nodes, masters)
        try:
            for index in range(masters + replicas):
                node_dir = directory / f"node{index}"
                node_dir.mkdir(parents=True, exist_ok=True)
                nodes.append(RedisServer.start(node_dir, extra=options, pick_port=cluster_port))
            cluster._join(replicas)
        except BaseException:
            cluster.close()
            raise
        return cluster

    def _join(self, replicas: int) -> None:
        ids = []
        for index, node in enumerate(self.nodes):
            client = _client(node.port)
            try:
                ids.append(client.execute_command("CLUSTER", "MYID").decode())
                if index < self.masters:
                    low = index * _SLOTS // self.masters
                    high = (index + 1) * _SLOTS // self.masters - 1
                    client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
                # Every node meets every earlier one: no waiting for gossip to spread.
                for other in self.nodes[:index]:
                    client.execute_command("CLUSTER", "MEET", "127.0.0.1", other.port)
            finally:
                client.close()
        for index in range(replicas):
            node = self.nodes[self.masters + index]
            deadline = time.monotonic() + _START_TIMEOUT
            while True:
                # A node must have heard of its master before it can follow it.
                client = _client(node.port)
                try:
                    client.execute_command("CLUSTER", "REPLICATE", ids[index])
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
                finally:
                    client.close()
        self.wait_ok()

    @property
    def url(self) -> str:
        """A URL naming one node (any node will do for a cluster client)."""
        return self.nodes[0].url

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.nodes[0].port}"

    def running_nodes(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.running]

    def cluster_nodes(self) -> list[dict[str, Any]]:
        """``CLUSTER NODES`` as seen by a running node: port, id, flags, slots."""
        for node in self.running_nodes():
            client = _client(node.port)
            try:
                text = client.execute_command("CLUSTER", "NODES")
            except Exception:
                continue
            finally:
                client.close()
            if isinstance(text, bytes):
                text = text.decode()
            if isinstance(text, dict):  # redis-py may parse it already
                return [
                    {"port": int(addr.split(":")[1].split("@")[0]), "id": info["node_id"],
                     "flags": info["flags"], "slots": info.get("slots", [])}
                    for addr, info in text.items()
                ]
            out = []
            for line in text.splitlines():
                parts = line.split()
                out.append({
                    "port": int(parts[1].split(":")[1].split("@")[0]),
                    "id": parts[0],
                    "flags": parts[2],
                    "slots": parts[8:],
                })
            return out
        raise RuntimeError("no cluster node answers")

    def master_for_slot(self, slot: int, timeout: float = 10.0) -> RedisServer:
        """The node serving ``slot``, once the node asked has heard of it.

        Gossip is slow: a client may already be redirected to a promoted replica
        while another node still lists the failed master, so this asks again.
        """
        found = _until(lambda: self._master_in_view(slot), timeout)
        if found is None:
            raise LookupError(f"no master serves slot {slot} after {timeout:g} s")
        return found

    def _master_in_view(self, slot: int) -> RedisServer | None:
        for info in self.cluster_nodes():
            if "master" not in info["flags"] or "fail" in info["flags"]:
                continue
            for part in info["slots"]:
                if isinstance(part, (list, tuple)):
                    low, high = int(part[0]), int(part[1])
                elif "-" in part and not part.startswith("["):
                    low, high = (int(x) for x in part.split("-"))
                elif part.startswith("["):
                    continue
                else:
                    low = high = int(part)
                if low <= slot <= high:
                    return next(n for n in self.nodes if n.port == info["port"])
        return None

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Wait until every running node says the cluster is ok and knows all nodes,
        and every replica is in sync with its master."""
        if not _until(lambda: all(self._node_ok(node) for node in self.running_nodes()), timeout):
            raise RuntimeError(f"cluster at {self.address} not ok after {timeout:g} s")

    def _node_ok(self, node: RedisServer) -> bool:
        client = _client(node.port)
        try:
            info = client.execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            if isinstance(info, dict):
                state, known = info.get("cluster_state"), info.get("cluster_known_nodes")
            else:
                fields = dict(
                    line.split(":", 1) for line in info.splitlines() if ":" in line
                )
                state, known = fields.get("cluster_state"), fields.get("cluster_known_nodes")
            if state != "ok" or int(known or 0) != len(self.nodes):
                return False
            if node in self.nodes[self.masters :]:
                # A replica counts once it has its master's data.
                replication = client.info("replication")
                return replication.get("role") != "slave" or (
                    replication.get("master_link_status") == "up"
                )
            return True
        except Exception:
            return False
        finally:
            client.close()

    def restart(self) -> None:
        """Stop every node, start them again and wait until the cluster is ok: each
        keeps its identity and slots (``nodes.conf``), and, unless ``persistent``, no data."""
        for node in self.nodes:
            node.stop()
        for node in self.nodes:
            node.resume()
        self.wait_ok()

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
