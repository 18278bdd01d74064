"""Old module path, kept for compatibility: see :mod:`robotgate.robots`."""

from .robots import DEFAULT_MAX_BYTES, MAX_LINE_LENGTH, RequestRate, RobotsTxt

__all__ = ["DEFAULT_MAX_BYTES", "MAX_LINE_LENGTH", "RequestRate", "RobotsTxt"]
