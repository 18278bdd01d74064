"""A robots.txt dialect registered for the length of one test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from robotgate.robots import rules
from robotgate.robots.rules import Parser, RobotsTxt, register_dialect


@contextmanager
def registered_dialect(name: str, parser: Parser, rules_class: type[RobotsTxt]) -> Iterator[None]:
    """``register_dialect`` for the block; afterwards the registry is as it was
    (robotgate has no way to unregister a dialect: tests only need one)."""
    register_dialect(name, parser, rules_class)
    try:
        yield
    finally:
        del rules._REGISTRY[name]
