"""Names of testbed/redis_server.py for the test modules that import them from here."""

from testbed.redis_server import MISSING_REASON, RedisServer, find_redis_server

__all__ = ["MISSING_REASON", "RedisServer", "find_redis_server"]
