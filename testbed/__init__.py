"""What tests/ and benchmarks/ both run, so that neither imports the other.

The loopback server that plays many robots.txt hosts (``server``), a throwaway Redis and Redis
Cluster (``redis_server``), the polite-crawl checks on the server's records (``crawl``) and the
fleet of worker processes sharing one Redis (``fleet``).
"""
