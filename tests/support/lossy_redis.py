"""A Redis client that loses replies: the command runs on the server, the caller hears
a dropped connection instead (what a reply cut off on the wire looks like to it).

``LossyRedis.lose(sha)`` arms it: the next request that carries the script ``sha``
(``EVAL`` or ``EVALSHA``, alone or in a pipeline) is sent and answered, then the answer
is thrown away and :class:`redis.exceptions.ConnectionError` raised.  The store then
sends the request again, as it would after a real lost reply.
"""

from __future__ import annotations

import hashlib
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError

__all__ = ["LossyRedis"]


def _script_sha(args: tuple[Any, ...]) -> str | None:
    """The SHA-1 of the script an ``EVAL``/``EVALSHA`` command runs (None: not one)."""
    if len(args) < 2:
        return None
    verb = args[0].upper() if isinstance(args[0], str) else args[0]
    if verb == "EVALSHA":
        return str(args[1])
    if verb == "EVAL":
        source = args[1].encode() if isinstance(args[1], str) else args[1]
        return hashlib.sha1(source).hexdigest()
    return None


class LossyRedis(aioredis.Redis):
    """A plain Redis client whose armed requests lose their replies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: SHA-1 -> how many more requests carrying it lose their reply.
        self.armed: dict[str, int] = {}
        #: Replies lost so far, by SHA-1.
        self.lost: dict[str, int] = {}

    def lose(self, sha: str, times: int = 1) -> None:
        self.armed[sha] = self.armed.get(sha, 0) + times

    def should_lose(self, shas: list[str | None]) -> bool:
        for sha in shas:
            if sha is not None and self.armed.get(sha, 0) > 0:
                self.armed[sha] -= 1
                self.lost[sha] = self.lost.get(sha, 0) + 1
                return True
        return False

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        reply = await super().execute_command(*args, **options)
        if self.should_lose([_script_sha(args)]):
            raise RedisConnectionError("reply lost (LossyRedis)")
        return reply

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return _LossyPipeline(self, transaction, shard_hint)


class _LossyPipeline(Pipeline):
    def __init__(self, client: LossyRedis, transaction: bool, shard_hint: str | None) -> None:
        super().__init__(client.connection_pool, client.response_callbacks, transaction,
                         shard_hint)
        self._lossy = client

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        shas = [_script_sha(tuple(args)) for args, _ in self.command_stack]
        replies = await super().execute(raise_on_error)
        if self._lossy.should_lose(shas):
            raise RedisConnectionError("reply lost (LossyRedis)")
        return replies
