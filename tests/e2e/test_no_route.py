"""A machine without IPv6 (Docker's default) meets a site reachable over IPv6 only
(issue 101): the connect fails with EADDRNOTAVAIL, which also means "out of local
ports".  Told apart: an address family or route this machine lacks is the site's
unreachability for this machine (cached, reported with the reason), tried on the
site's other addresses first; only a shortage on a route it has is the crawler's.
The child runs in a network namespace of its own with IPv6 disabled."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from robotgate.gate.connections import NoRouteError
from robotgate.policy.fetch import local_failure
from testbed.children import child_env

CHILD = Path(__file__).parents[1] / "support" / "children" / "without_ipv6.py"


def _namespaces() -> str | None:
    """Why a network namespace without IPv6 cannot be made here (None: it can)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return "needs Linux and unshare"
    if shutil.which("ip") is None:
        return "needs ip (iproute2) to bring loopback up in the namespace"
    tried = subprocess.run(["unshare", "-rn", "sh", "-c",
                            "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"],
                           capture_output=True, text=True, timeout=30)
    if tried.returncode != 0:
        return f"no network namespace with IPv6 disabled: {tried.stderr.strip()}"
    return None


@pytest.mark.slow
def test_a_site_this_machine_has_no_route_to_is_unreachable_not_a_shortage() -> None:
    why = _namespaces()
    if why is not None:
        pytest.skip(why)
    child = subprocess.run(["unshare", "-rn", sys.executable, str(CHILD)],
                           capture_output=True, text=True, env=child_env(),
                           timeout=120)  # hang guard
    assert child.returncode == 0, child.stderr[-3000:]
    seen = json.loads(child.stdout.strip().splitlines()[-1])
    # Not "this machine ran out of local ports", asked again for 30 s on every ask:
    assert "local_failure" not in seen and seen["shortages"] == 0, seen
    assert seen["allowed"] is False and seen["outcome"] == "unreachable", seen
    assert "no address or route for IPv6 ::1" in seen["reason"], seen
    assert seen["cached"] is not None and seen["cached"][0] == "unreachable", seen
    # A site with an IPv4 address too is reached on it.
    assert seen["dual"] == [200, "page"], seen


def test_no_route_is_no_shortage_but_a_bare_eaddrnotavail_is() -> None:
    key_error = OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
    assert local_failure(key_error, "robots.txt") is not None  # ports ran out

    class Key:  # aiohttp's ConnectionKey, as far as its error reads it
        host, port, ssl = "v6only.test", 80, True

    unroutable = NoRouteError(Key(), OSError(errno.EADDRNOTAVAIL, "no route for IPv6 ::1"))
    assert local_failure(unroutable, "robots.txt") is None
