"""Old module path, kept for compatibility: see :mod:`robotgate.robots.patterns`."""

from .robots.patterns import RuleSet

__all__ = ["RuleSet"]
