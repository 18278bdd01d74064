"""A fake clock for pure scheduling tests: loop time and wall time move only when told."""

from __future__ import annotations

__all__ = ["WALL0", "Clock"]

WALL0 = 1_700_000_000.0


class Clock:
    """Loop time and wall time that move together, only when told."""

    def __init__(self) -> None:
        self.t = 100.0
        self.wall = WALL0

    def __call__(self) -> float:
        return self.t

    def now_wall(self) -> float:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self.wall += seconds
