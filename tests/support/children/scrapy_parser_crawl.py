"""A Scrapy crawl with ROBOTSTXT_OBEY through the robots.txt parser PARSER, following links from
START for LIMIT pages; prints the parsers Scrapy announced and its stats as one JSON line.

    python tests/support/children/scrapy_parser_crawl.py START LIMIT PARSER
"""

import json
import sys

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess

start, limit, parser = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen = {"parsers": [], "stats": {}}


class Site(scrapy.Spider):
    name = "site"
    start_urls = (start,)

    def parse(self, response):
        yield from response.follow_all(css="a", callback=self.parse)


def parsed(robotparser, **kwargs):
    seen["parsers"].append(type(robotparser).__module__ + "." + type(robotparser).__name__)


def closed(spider, reason):
    stats = spider.crawler.stats.get_stats()
    seen["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}


process = CrawlerProcess(settings={
    "ROBOTSTXT_OBEY": True,
    "ROBOTSTXT_PARSER": parser,
    "USER_AGENT": "TestBot/1.0 (+https://example.com/bot)",
    "CLOSESPIDER_PAGECOUNT": limit,
    "DOWNLOAD_DELAY": 0.05,
    "RANDOMIZE_DOWNLOAD_DELAY": False,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "ERROR",
})
crawler = process.create_crawler(Site)
crawler.signals.connect(parsed, signal=signals.robots_parsed)
crawler.signals.connect(closed, signal=signals.spider_closed)
process.crawl(crawler)
process.start()
print(json.dumps(seen))
