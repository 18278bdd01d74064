"""Old module path, kept for compatibility: see :mod:`robotgate.robots.classic`."""

from .robots.classic import ClassicRobotsTxt, classic_body_usable, parse_classic

__all__ = ["ClassicRobotsTxt", "classic_body_usable", "parse_classic"]
