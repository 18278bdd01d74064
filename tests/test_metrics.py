"""OpenTelemetry metrics: names, units and attributes as the semantic conventions have them
(read back through the SDK's in-memory reader), and after a loopback crawl, instruments that
agree with the server."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import robotgate
from robotgate import Disallowed, RobotGate
from robotgate.events import (
    BackoffStarted,
    ResponseAnswered,
    RobotsFetched,
    TurnWaited,
    UrlSkipped,
)
from robotgate.metrics import INSTRUMENTS, Metrics, MetricsOptions, metrics_listener
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
    requests = _by(points["robotgate.requests"], "http.response.status_code")
    assert requests == {200: 3, 404: 1, 429: 1}
    assert sum(requests.values()) == len(served)
    assert _by(points["robotgate.robots_fetches"], "outcome") == {"ok": public.robots_hits}
    assert _by(points["robotgate.skipped"], "outcome") == {"rules": 2}
    assert _by(points["robotgate.backoffs"], "http.response.status_code") == {429: 1}
    times = {p.attributes["http.response.status_code"]: p
             for p in points["robotgate.request.duration"]}
    assert {k: p.count for k, p in times.items()} == {200: 3, 404: 1, 429: 1}
    assert all(p.sum > 0 for p in times.values())
    waits = {p.attributes["reason"]: p for p in points["robotgate.wait.duration"]}
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


class _Paced:
    """What the metrics read of a gate: the servers it paces."""

    def __init__(self, servers: int) -> None:
        self.paced_servers = servers


ORIGIN = "https://www.example.com:8443"


def _one_of_each(listener: Metrics) -> None:
    listener(ResponseAnswered(1.0, ORIGIN, "host:www.example.com", ORIGIN + "/a", 200, 0.25))
    listener(ResponseAnswered(1.0, ORIGIN, "host:www.example.com", ORIGIN + "/b", 503, 0.5))
    listener(TurnWaited(1.0, ORIGIN, "host:www.example.com", ORIGIN + "/a", 2.0, "crawl-delay"))
    listener(RobotsFetched(1.0, ORIGIN, "host:www.example.com", "ok", 200, 120, 0.1))
    listener(UrlSkipped(1.0, ORIGIN, "host:www.example.com", ORIGIN + "/no", "Disallow: /no",
                        "rules"))
    listener(BackoffStarted(1.0, ORIGIN, "host:www.example.com", 503, 4.0))


#: What dashboards and the semantic conventions expect: name -> (data kind, unit, attributes).
EXPECTED = {
    "robotgate.requests": ("counter", "{request}", {"http.response.status_code"}),
    "robotgate.robots_fetches": ("counter", "{fetch}", {"outcome"}),
    "robotgate.skipped": ("counter", "{url}", {"outcome"}),
    "robotgate.backoffs": ("counter", "{backoff}", {"http.response.status_code"}),
    "robotgate.wait.duration": ("histogram", "s", {"reason"}),
    "robotgate.request.duration": ("histogram", "s", {"http.response.status_code"}),
    "robotgate.hosts_cached": ("up-down counter", "{host}", set()),
}


def _kind(data: Any) -> str:
    if type(data).__name__ == "Histogram":
        return "histogram"
    return "counter" if data.is_monotonic else "up-down counter"


def _read(reader: InMemoryMetricReader) -> tuple[Any, dict[str, Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    [resource] = data.resource_metrics
    [scope] = resource.scope_metrics
    return scope, {metric.name: metric for metric in scope.metrics}


def test_names_units_and_attributes_follow_the_conventions_and_the_meter_has_a_version() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    gate = _Paced(3)  # held: the metrics keep only a weak reference
    listener = metrics_listener(provider, gate)
    assert listener is not None
    _one_of_each(listener)
    scope, metrics = _read(reader)
    assert scope.scope.name == "robotgate"
    assert scope.scope.version == robotgate.__version__ and scope.scope.version
    assert scope.schema_url.startswith("https://opentelemetry.io/schemas/1.")
    found = {name: (_kind(m.data), m.unit,
                    {key for point in m.data.data_points for key in point.attributes})
             for name, m in metrics.items()}
    assert found == EXPECTED
    assert {name: (kind, unit, set(keys)) for name, (kind, unit, keys)
            in INSTRUMENTS.items()} == EXPECTED  # the table the docs are checked against
    durations = {name for name, (kind, unit, _) in found.items() if unit == "s"}
    assert all(name.endswith(".duration") and found[name][0] == "histogram"
               for name in durations)
    answered = metrics["robotgate.requests"].data.data_points
    assert {p.attributes["http.response.status_code"]: p.value for p in answered} == {
        200: 1, 503: 1}
    assert [p.value for p in metrics["robotgate.hosts_cached"].data.data_points] == [3]
    provider.shutdown()


def test_server_address_only_when_asked_for() -> None:
    for asked in (False, True):
        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        listener = metrics_listener(MetricsOptions(provider, server_address=asked), _Paced(1))
        assert listener is not None
        _one_of_each(listener)
        _, metrics = _read(reader)
        for name, metric in metrics.items():
            for point in metric.data.data_points:
                address = point.attributes.get("server.address")
                if asked and name != "robotgate.hosts_cached":
                    assert address == "www.example.com", name
                else:
                    assert address is None, name
        provider.shutdown()


def test_the_operators_page_tables_every_instrument_with_its_unit_and_attributes() -> None:
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "operators.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in page.splitlines()
            if line.startswith("| `robotgate.")}
    assert set(rows) == set(INSTRUMENTS)
    for name, (kind, unit, attributes) in INSTRUMENTS.items():
        cells = [cell.strip() for cell in rows[name].split("|")]
        assert cells[2] == kind and cells[3] == f"`{unit}`", rows[name]
        assert all(f"`{key}`" in cells[4] for key in attributes), rows[name]
