"""The Scrapy crawl runner of testbed/scrapy_crawl_runner.py, by the module name tests/contract
runs it under."""

import sys

from testbed.scrapy_crawl_runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
