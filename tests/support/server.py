"""Names of testbed/server.py for the test modules that import them from here."""

from testbed.server import BenchServer, HostPlan, HostStats

__all__ = ["BenchServer", "HostPlan", "HostStats"]
