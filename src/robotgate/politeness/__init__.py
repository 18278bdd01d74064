"""The politeness core: robots.txt cache, scheduler, every request's turn.

asyncio, but no HTTP client: adapters (aiohttp, httpx, Scrapy) plug in through
small interfaces.
"""
