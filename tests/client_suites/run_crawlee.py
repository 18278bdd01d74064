"""crawlee's own HTTP-client tests through robotgate: each must pass through
``RobotGateHttpClient`` what it passes plain, but for the tests named in
``expected_failures.txt`` (mode ``crawlee``) with their reasons.

    ROBOTGATE_CRAWLEE_TESTS=/path/to/crawlee-python python tests/client_suites/run_crawlee.py

crawlee's sdist and wheel carry no tests, so the path of a checkout of crawlee-python's
repository (its ``tests/`` beside it) comes from ``ROBOTGATE_CRAWLEE_TESTS``; without it
this says it skipped.  Nothing of theirs is kept here.  It runs
``tests/unit/http_clients/test_http_clients.py``, ``test_impit.py`` and ``test_httpx.py``
plain, then with crawlee's ``ImpitHttpClient``, ``HttpxHttpClient`` and
``CurlImpersonateHttpClient`` each made as the inner client of a ``RobotGateHttpClient``
(``robotgate_wrap.py``, mode ``crawlee``).  Their servers and proxy are on loopback;
the tests that ask a site on the internet are not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from run import below_the_floor, expected_failures, pip

HERE = Path(__file__).resolve().parent
# What crawlee's tests' conftest needs that crawlee's own install does not bring.
SUITE_DEPS = ["uvicorn", "websockets", "proxy.py", "fakeredis", "sortedcontainers",
              "curl_cffi", "pytest-rerunfailures"]
TESTS = ["tests/unit/http_clients/test_http_clients.py",
         "tests/unit/http_clients/test_impit.py", "tests/unit/http_clients/test_httpx.py"]
# Each asks https://apify.com/: no traffic leaves loopback here.
ONLINE = "not test_http_2 and not proxy_disabled"
PYTEST_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
timeout = 120
markers =
  run_alone: marks tests that must run in isolation
filterwarnings =
  ignore:websockets.legacy is deprecated:DeprecationWarning
  ignore:websockets.server.WebSocketServerProtocol is deprecated:DeprecationWarning
"""


def run(root: Path, mode: str, deps: Path, ini: Path, out: Path) -> dict[str, object]:
    env = {**os.environ, "ROBOTGATE_SUITE_WRAP": mode, "ROBOTGATE_SUITE_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(deps), str(root),
                                          os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-p", "robotgate_wrap", "-c", str(ini), "--rootdir", str(root),
                    "-k", ONLINE, *TESTS], cwd=root, env=env, stdout=subprocess.DEVNULL,
                   check=False)
    found: dict[str, object] = json.loads(out.read_text())
    found["seconds"] = time.monotonic() - started
    return found


def main() -> int:
    where = os.environ.get("ROBOTGATE_CRAWLEE_TESTS")
    if not where or not (Path(where) / TESTS[0]).is_file():
        print("crawlee suite: skipped (set ROBOTGATE_CRAWLEE_TESTS to a checkout of "
              "crawlee-python holding tests/unit/http_clients)")
        return 0
    root = Path(where).resolve()
    named = expected_failures().get("crawlee", {})
    with tempfile.TemporaryDirectory(prefix="robotgate-crawlee-") as tmp:
        work = Path(tmp)
        deps = work / "deps"
        pip("install", "--no-deps", "--target", str(deps), *SUITE_DEPS)
        ini = work / "pytest.ini"
        ini.write_text(PYTEST_INI)
        plain = run(root, "record", deps, ini, work / "plain.json")
        outcomes = plain["outcomes"]
        assert isinstance(outcomes, dict)
        floor = sorted(test for test, outcome in outcomes.items() if outcome == "passed")
        print(f"crawlee {version('crawlee')} plain: {len(floor)}/{len(outcomes)} passed "
              f"({plain['seconds']:.0f} s)")
        wrapped = run(root, "crawlee", deps, ini, work / "wrapped.json")
        got = wrapped["outcomes"]
        assert isinstance(got, dict)
        missing = [test for test in floor if got.get(test) != "passed"]
        print(f"  crawlee through RobotGateHttpClient: {len(floor) - len(missing)}/"
              f"{len(floor)} passed ({wrapped['seconds']:.0f} s)")
        failed = not below_the_floor(missing, named, got) or not floor
    print("crawlee suite:", "FAILED" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
