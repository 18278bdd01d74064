"""The clients' own test suites through robotgate: each must pass wrapped what it
passes plain, but for the tests named in ``expected_failures.txt`` with their reasons.

    python tests/client_suites/run.py [aiohttp] [httpx]     (CI runs both: .ci/run)

For the installed aiohttp and httpx it downloads their sdists from PyPI (``pip
download --no-deps --no-binary``), unpacks their tests into a temporary directory
(nothing of theirs is kept here), and runs

- aiohttp's ``tests/test_client_middleware*.py`` plain, then with ``gate.middleware``
  first and last in every session (``robotgate_wrap.py``);
- httpx's ``tests/client/`` plain, then with every ``AsyncClient``'s transport wrapped
  in ``RobotGateTransport`` (asyncio only: the gate runs on asyncio, not trio).

A wrapped run runs the tests that passed plain and made a client of that kind.  It
fails on a test that passed plain, failed wrapped and is not named in the list; a
name in the list that passed is reported (the list may shrink).  crawlee's sdist
carries no tests (nor does its wheel, nor any other package on PyPI), so it has no
run here: tests/integrations/test_crawlee.py holds the adapter's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
# What the suites need that the clients' own install does not bring (httpx's tests'
# server, certificates and its trio variants' import).
SUITE_DEPS = ["uvicorn", "trustme", "trio", "outcome", "sortedcontainers"]
PYTEST_INI = {
    "aiohttp": """[pytest]
filterwarnings =
  error
  ignore:Unclosed client session <aiohttp.client.ClientSession object at 0x:ResourceWarning
  ignore:aiohttp.pytest_plugin will be removed in v4:DeprecationWarning
markers =
  skip_blockbuster: mark test to skip the blockbuster fixture.
timeout = 120
""",
    "httpx": """[pytest]
filterwarnings = error
markers =
  copied_from(source, changes=None): copied
  network: needs the network
timeout = 120
""",
}
SUITES = {  # client: (its tests, the pytest arguments, the wrapped modes)
    "aiohttp": (["tests/test_client_middleware.py", "tests/test_client_middleware_digest_auth.py"],
                [], ["aiohttp-first", "aiohttp-last"]),
    "httpx": (["tests/client"], ["-k", "not trio"], ["httpx"]),
}


def expected_failures() -> dict[str, dict[str, str]]:
    """``expected_failures.txt``: mode -> test id -> reason."""
    found: dict[str, dict[str, str]] = {}
    for line in (HERE / "expected_failures.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        mode, test, reason = (part.strip() for part in line.split("|", 2))
        found.setdefault(mode, {})[test] = reason
    return found


def below_the_floor(missing: list[str], named: dict[str, str], got: dict[str, str]) -> bool:
    """Say which tests that pass plain did not pass wrapped (``missing``), each by design
    (``named``, with its reason) or a failure, and which named ones passed; True when every
    missing one is named."""
    ok = True
    for test in missing:
        if test in named:
            print(f"    by design: {test}: {named[test]}")
        else:
            print(f"    FAIL: {test} passes plain, {got.get(test, 'not run')} with robotgate")
            ok = False
    for test in sorted(set(named) - set(missing)):
        print(f"    listed but passed (or not run): {test}")
    return ok


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "-q", *args], check=True,
                   stderr=subprocess.DEVNULL if "download" in args else None)


def unpack_tests(client: str, into: Path) -> Path:
    """The client's sdist's ``tests/`` for the installed version, in ``into/client``."""
    pinned = f"{client}=={version(client)}"
    pip("download", "--no-deps", "--no-binary", client, pinned, "-d", str(into))
    sdist = next(into.glob(f"{client}-*.tar.gz"))
    root = into / client
    root.mkdir()
    with tarfile.open(sdist) as tar:
        prefix = f"{client}-{version(client)}/tests/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        for member in members:
            member.name = member.name[len(prefix) - len("tests/"):]
        tar.extractall(root, members=members, filter="data")
    (root / "pytest.ini").write_text(PYTEST_INI[client])
    return root


def run(root: Path, mode: str, args: list[str], deps: Path, out: Path) -> dict[str, object]:
    """One pytest run of the suite in ``root`` under ``mode``; its outcomes."""
    env = {**os.environ, "ROBOTGATE_SUITE_WRAP": mode, "ROBOTGATE_SUITE_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(deps),
                                          os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-p", "no:asyncio", "-p", "robotgate_wrap", "--no-header",
                    *args], cwd=root, env=env, stdout=subprocess.DEVNULL, check=False)
    found: dict[str, object] = json.loads(out.read_text())
    found["seconds"] = time.monotonic() - started
    return found


def main() -> int:
    expected = expected_failures()
    failed = False
    with tempfile.TemporaryDirectory(prefix="robotgate-suites-") as tmp:
        work = Path(tmp)
        deps = work / "deps"
        pip("install", "--no-deps", "--target", str(deps), *SUITE_DEPS)
        for client, (paths, args, modes) in SUITES.items():
            if sys.argv[1:] and client not in sys.argv[1:]:
                continue  # run.py [CLIENT...]: those suites only
            root = unpack_tests(client, work)
            plain = run(root, "record", [*args, *paths], deps, work / f"{client}-plain.json")
            outcomes = plain["outcomes"]
            assert isinstance(outcomes, dict)
            passed = {test for test, outcome in outcomes.items() if outcome == "passed"}
            floor = sorted(passed & set(plain["made_client"]))  # type: ignore[arg-type]
            print(f"{client} {version(client)} plain: {len(passed)}/{len(outcomes)} passed, "
                  f"{len(floor)} of them with a client of its own ({plain['seconds']:.0f} s)")
            if not floor:
                print(f"  FAIL: no {client} test passed plain with a client")
                failed = True
                continue
            for mode in modes:
                # A test whose failure would stop the whole run is left out, saying why.
                left_out = {test for test, why in expected.get(mode, {}).items()
                            if why.startswith("not run:")}
                wrapped = run(root, mode, [test for test in floor if test not in left_out],
                              deps, work / f"{client}-{mode}.json")
                got = wrapped["outcomes"]
                assert isinstance(got, dict)
                missing = [test for test in floor if got.get(test) != "passed"]
                named = expected.get(mode, {})
                print(f"  {mode}: {len(floor) - len(missing)}/{len(floor)} passed "
                      f"({wrapped['seconds']:.0f} s)")
                failed = not below_the_floor(missing, named, got) or failed
    print("client suites:", "FAILED" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
