"""The politeness core: robots.txt cache, scheduler and crawl frontier.

asyncio, but no HTTP client: adapters (aiohttp, httpx, Scrapy) plug in through
small interfaces.
"""
