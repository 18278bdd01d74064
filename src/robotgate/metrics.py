"""OpenTelemetry metrics fed by the gate's events (the ``robotgate[otel]`` extra).

Reported through the global meter provider, as instrumented libraries do;
``RobotGate(metrics=provider)`` names another, ``metrics=False`` turns them off.
The gate looks at the global provider when it is made: set the provider up
before making the gate (until then the gate records nothing, and pays nothing
for it).  Without ``opentelemetry-api`` there are no metrics.  Attributes are
bounded: a status class, an outcome, a reason; never a URL or a host name.

==============================  ==============  =================================
instrument                      kind            attributes
==============================  ==============  =================================
``robotgate.requests``          counter         ``status_class`` (``2xx`` ...)
``robotgate.robots_fetches``    counter         ``outcome``
``robotgate.skipped``           counter         ``outcome``
``robotgate.backoffs``          counter         ``status`` (429, 503)
``robotgate.wait``              histogram (s)   ``reason``
``robotgate.response_time``     histogram (s)   ``status_class``
``robotgate.hosts_cached``      up-down counter servers the gate paces now
==============================  ==============  =================================
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from .events import BackoffStarted, Event, ResponseAnswered, RobotsFetched, TurnWaited, UrlSkipped

__all__ = ["Metrics", "metrics_listener"]

#: The instruments' scope.
SCOPE = "robotgate"


def status_class(status: int) -> str:
    return f"{status // 100}xx" if 100 <= status < 600 else "other"


class Metrics:
    """An event listener that records the gate's instruments."""

    def __init__(self, meter: Any, gate: object) -> None:
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
            "robotgate.wait", unit="s", description="Waits for a server's turn")
        self.response_time = meter.create_histogram(
            "robotgate.response_time", unit="s", description="Time from send to headers")
        count = _weak_count(gate)

        def observe(_options: Any) -> Iterable[Any]:
            from opentelemetry.metrics import Observation

            n = count()
            return [Observation(n)] if n is not None else []

        meter.create_observable_up_down_counter(
            "robotgate.hosts_cached", callbacks=[observe], unit="{host}",
            description="Servers the gate keeps pacing state for")

    def __call__(self, event: Event) -> None:
        kind = type(event)
        if kind is ResponseAnswered:
            assert isinstance(event, ResponseAnswered)
            status = status_class(event.status)
            self.requests.add(1, {"status_class": status})
            self.response_time.record(event.seconds, {"status_class": status})
        elif kind is TurnWaited:
            assert isinstance(event, TurnWaited)
            self.wait.record(event.seconds, {"reason": event.reason})
        elif kind is RobotsFetched:
            assert isinstance(event, RobotsFetched)
            self.robots_fetches.add(1, {"outcome": event.outcome})
        elif kind is UrlSkipped:
            assert isinstance(event, UrlSkipped)
            self.skipped.add(1, {"outcome": event.outcome})
        elif kind is BackoffStarted:
            assert isinstance(event, BackoffStarted)
            self.backoffs.add(1, {"status": event.status})


def _weak_count(gate: object) -> Callable[[], int | None]:
    """The number of servers ``gate`` paces, while it lives: a provider outliving the
    gate keeps no gate."""
    ref = weakref.ref(gate)

    def count() -> int | None:
        owner = ref()
        return len(owner._scheduler) if owner is not None else None  # type: ignore[attr-defined]

    return count


def metrics_listener(provider: object, gate: object) -> Metrics | None:
    """The metrics listener of ``gate`` for ``provider`` (True: the global meter provider), or
    None when ``opentelemetry-api`` is not installed."""
    if provider is True and "opentelemetry.metrics" not in sys.modules:
        return None  # nobody set a global provider up (that imports it): no import either
    try:
        from opentelemetry import metrics
    except ImportError:
        return None
    source: Any = metrics.get_meter_provider() if provider is True else provider
    if isinstance(source, metrics.NoOpMeterProvider) or type(source).__name__ in _UNSET:
        return None  # nobody set a provider up: events cost nothing then
    return Metrics(source.get_meter(SCOPE), gate)


#: The global meter provider's class before the application sets one up.
_UNSET = frozenset({"_ProxyMeterProvider", "ProxyMeterProvider"})
