"""OpenTelemetry metrics: after a loopback crawl, the instruments agree with the server."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import (
    AGENT,
    Site,
    public,  # noqa: F401  (the fixture)
    public_loopback_1,
)

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            assert scope.scope.name == "robotgate"
            for metric in scope.metrics:
                found[metric.name] = list(metric.data.data_points)
    return found


def _by(points: list[Any], attribute: str) -> dict[Any, Any]:
    return {p.attributes[attribute]: p.value for p in points}


@pytest.mark.slow
async def test_the_instruments_count_what_the_server_saw(public: Site) -> None:  # noqa: F811
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    pages = ["/a", "/b", "/no/x", "/no/y", "/status/404", "/status/429", "/c"]
    async with RobotGate(AGENT, delay=0.05, is_private=public_loopback_1,
                         metrics=provider) as gate:
        for path in pages:
            with contextlib.suppress(Disallowed):
                await gate.fetch(public.url(path))
        points = _points(reader)
        cached = points["robotgate.hosts_cached"]
        assert [p.value for p in cached] == [1]
    served = public.paths()  # pages only: robots.txt is counted apart
    assert len(served) == 5 and public.robots_hits == 1
    assert _by(points["robotgate.requests"], "status_class") == {"2xx": 3, "4xx": 2}
    assert sum(_by(points["robotgate.requests"], "status_class").values()) == len(served)
    assert _by(points["robotgate.robots_fetches"], "outcome") == {"ok": public.robots_hits}
    assert _by(points["robotgate.skipped"], "outcome") == {"rules": 2}
    assert _by(points["robotgate.backoffs"], "status") == {429: 1}
    times = {p.attributes["status_class"]: p for p in points["robotgate.response_time"]}
    assert {k: p.count for k, p in times.items()} == {"2xx": 3, "4xx": 2}
    assert all(p.sum > 0 for p in times.values())
    waits = {p.attributes["reason"]: p for p in points["robotgate.wait"]}
    assert set(waits) <= {"delay", "back-off"} and waits["back-off"].count == 1
    assert waits["back-off"].sum >= 0.4  # the 429's back-off: at least 0.5 s less a tick
    for series in points.values():
        for point in series:  # bounded attributes: never a URL or a host
            assert not any("127.0.0.1" in str(v) for v in point.attributes.values())
    provider.shutdown()


async def test_no_metrics_when_turned_off_or_when_no_provider_is_set() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with RobotGate(AGENT, metrics=False) as off:
        assert off._events is None
    # The global provider is not set up in the tests: nothing listens, nothing is built.
    async with RobotGate(AGENT) as unset:
        assert unset._events is None
    async with RobotGate(AGENT, metrics=provider) as on:
        assert on._events is not None
    assert reader.get_metrics_data() is not None
    provider.shutdown()


def test_the_global_provider_set_up_first_is_used_and_none_costs_no_import() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from robotgate import RobotGate\n"
        "gate = RobotGate('Bot/1.0')\n"
        "assert gate._events is None and 'opentelemetry' not in sys.modules\n"
        "from opentelemetry import metrics\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "from opentelemetry.sdk.metrics.export import InMemoryMetricReader\n"
        "reader = InMemoryMetricReader()\n"
        "metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))\n"
        "gate = RobotGate('Bot/1.0')\n"
        "assert gate._events is not None and RobotGate('Bot/1.0', metrics=False)._events is None\n"
        "names = [m.name for r in reader.get_metrics_data().resource_metrics\n"
        "         for s in r.scope_metrics for m in s.metrics]\n"
        "print(names)\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "robotgate.hosts_cached" in out.stdout
