"""OpenTelemetry metrics fed by the gate's events (the ``robotgate[otel]`` extra).

Reported through the global meter provider, as instrumented libraries do;
``RobotGate(metrics=provider)`` names another, ``metrics=False`` turns them off,
``metrics=MetricsOptions(server_address=True)`` adds the server's name to each
series.  The gate looks at the global provider when it is made: set the provider
up before making the gate (until then the gate records nothing, and pays nothing
for it).  Without ``opentelemetry-api`` there are no metrics.

The meter is ``robotgate`` with the package's version.  Names and attributes
follow OpenTelemetry's semantic conventions where one exists (durations in
seconds named ``*.duration``, ``http.response.status_code``, ``server.address``).
Attributes are bounded by default: a status code, an outcome, a reason; never a
URL, and a host name only when asked for.

==============================  ==============  ==================  ===============================
instrument                      kind            unit                attributes
==============================  ==============  ==================  ===============================
``robotgate.requests``          counter         ``{request}``       ``http.response.status_code``
``robotgate.robots_fetches``    counter         ``{fetch}``         ``outcome``
``robotgate.skipped``           counter         ``{url}``           ``outcome``
``robotgate.backoffs``          counter         ``{backoff}``       ``http.response.status_code``
``robotgate.wait.duration``     histogram       ``s``               ``reason``
``robotgate.request.duration``  histogram       ``s``               ``http.response.status_code``
``robotgate.hosts_cached``      up-down counter ``{host}``          (none)
==============================  ==============  ==================  ===============================

With ``server_address=True`` every instrument but ``robotgate.hosts_cached`` also
carries ``server.address`` (the host name or IP address of the origin).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from .events import BackoffStarted, Event, ResponseAnswered, RobotsFetched, TurnWaited, UrlSkipped

__all__ = ["INSTRUMENTS", "Metrics", "MetricsOptions", "metrics_listener"]


class Paces(Protocol):
    """What the metrics read of a gate: how many servers it paces."""

    @property
    def paced_servers(self) -> int: ...


#: The instruments' scope (the meter's name).
SCOPE = "robotgate"
#: The semantic conventions the attribute names follow (``http.response.status_code``
#: and ``server.address`` are stable from 1.23 on).
SCHEMA_URL = "https://opentelemetry.io/schemas/1.26.0"

STATUS_CODE = "http.response.status_code"
SERVER_ADDRESS = "server.address"

#: Every instrument: ``name -> (kind, unit, attributes)``, as docs/operators.md tables them.
INSTRUMENTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "robotgate.requests": ("counter", "{request}", (STATUS_CODE,)),
    "robotgate.robots_fetches": ("counter", "{fetch}", ("outcome",)),
    "robotgate.skipped": ("counter", "{url}", ("outcome",)),
    "robotgate.backoffs": ("counter", "{backoff}", (STATUS_CODE,)),
    "robotgate.wait.duration": ("histogram", "s", ("reason",)),
    "robotgate.request.duration": ("histogram", "s", (STATUS_CODE,)),
    "robotgate.hosts_cached": ("up-down counter", "{host}", ()),
}


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """``RobotGate(metrics=MetricsOptions(...))``: which provider, and whether each series
    names its server.

    ``provider`` is a ``MeterProvider`` (True: the global one).  ``server_address=True``
    adds ``server.address`` to every instrument but ``robotgate.hosts_cached``: one
    series per server, so use it for a crawl of a known, small set of sites (an
    OpenTelemetry View can drop it again).
    """

    provider: object = True
    server_address: bool = False


def server_address(origin: str) -> str:
    """The host name or IP address of ``origin`` (``scheme://host[:port]``), as
    ``server.address`` holds it.

    >>> server_address("https://[::1]:8443"), server_address("http://example.com")
    ('::1', 'example.com')
    """
    return urlsplit(origin).hostname or ""


class Metrics:
    """An event listener that records the gate's instruments."""

    def __init__(self, meter: Any, gate: Paces, *, with_server: bool = False) -> None:
        self.with_server = with_server
        self.requests = meter.create_counter(
            "robotgate.requests", unit="{request}", description="Page requests answered")
        self.robots_fetches = meter.create_counter(
            "robotgate.robots_fetches", unit="{fetch}", description="robots.txt fetches")
        self.skipped = meter.create_counter(
            "robotgate.skipped", unit="{url}", description="URLs robots.txt kept the robot from")
        self.backoffs = meter.create_counter(
            "robotgate.backoffs", unit="{backoff}", description="429/503 answers that slowed "
            "a server down")
        self.wait = meter.create_histogram(
            "robotgate.wait.duration", unit="s",
            description="Time a page request waited for its server's turn")
        self.request_duration = meter.create_histogram(
            "robotgate.request.duration", unit="s",
            description="Time from sending a page request to its response headers")
        count = _weak_count(gate)

        def observe(_options: Any) -> Iterable[Any]:
            from opentelemetry.metrics import Observation

            n = count()
            return [Observation(n)] if n is not None else []

        meter.create_observable_up_down_counter(
            "robotgate.hosts_cached", callbacks=[observe], unit="{host}",
            description="Servers the gate keeps pacing state for")

    def _attributes(self, event: Event, name: str, value: object) -> dict[str, Any]:
        if self.with_server:
            return {name: value, SERVER_ADDRESS: server_address(event.origin)}
        return {name: value}

    def __call__(self, event: Event) -> None:
        kind = type(event)
        if kind is ResponseAnswered:
            assert isinstance(event, ResponseAnswered)
            attributes = self._attributes(event, STATUS_CODE, event.status)
            self.requests.add(1, attributes)
            self.request_duration.record(event.seconds, attributes)
        elif kind is TurnWaited:
            assert isinstance(event, TurnWaited)
            self.wait.record(event.seconds, self._attributes(event, "reason", event.reason))
        elif kind is RobotsFetched:
            assert isinstance(event, RobotsFetched)
            self.robots_fetches.add(1, self._attributes(event, "outcome", event.outcome))
        elif kind is UrlSkipped:
            assert isinstance(event, UrlSkipped)
            self.skipped.add(1, self._attributes(event, "outcome", event.outcome))
        elif kind is BackoffStarted:
            assert isinstance(event, BackoffStarted)
            self.backoffs.add(1, self._attributes(event, STATUS_CODE, event.status))


def _weak_count(gate: Paces) -> Callable[[], int | None]:
    """The number of servers ``gate`` paces, while it lives: a provider outliving the
    gate keeps no gate."""
    ref = weakref.ref(gate)

    def count() -> int | None:
        owner = ref()
        return owner.paced_servers if owner is not None else None

    return count


def metrics_listener(metrics: object, gate: Paces) -> Metrics | None:
    """The metrics listener of ``gate`` for ``metrics`` (a meter provider, True: the global
    one, or :class:`MetricsOptions`), or None when ``opentelemetry-api`` is not installed
    or no provider is set up."""
    options = metrics if isinstance(metrics, MetricsOptions) else MetricsOptions(metrics)
    provider = options.provider
    if provider is True and "opentelemetry.metrics" not in sys.modules:
        return None  # nobody set a global provider up (that imports it): no import either
    try:
        from opentelemetry import metrics as otel_metrics
    except ImportError:
        return None
    source: Any = otel_metrics.get_meter_provider() if provider is True else provider
    if isinstance(source, otel_metrics.NoOpMeterProvider) or type(source).__name__ in _UNSET:
        return None  # nobody set a provider up: events cost nothing then
    from . import __version__

    meter = source.get_meter(SCOPE, version=__version__, schema_url=SCHEMA_URL)
    return Metrics(meter, gate, with_server=options.server_address)


#: The global meter provider's class before the application sets one up.
_UNSET = frozenset({"_ProxyMeterProvider", "ProxyMeterProvider"})
