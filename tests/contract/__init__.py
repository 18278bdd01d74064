"""Promises each client keeps alike: every case through aiohttp, httpx, Scrapy and gate.crawl."""
