"""Runs a script with every host name resolved to 127.0.0.1 port 9 (discard: refused), so a
README example runs as pasted and no request leaves the machine.

    python tests/support/children/loopback_runner.py SCRIPT
"""

from __future__ import annotations

import runpy
import socket
import sys
from typing import Any

_real = socket.getaddrinfo


def _loopback(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    return _real("127.0.0.1", 9, *args, **kwargs)


if __name__ == "__main__":
    socket.getaddrinfo = _loopback
    runpy.run_path(sys.argv[1], run_name="__main__")
