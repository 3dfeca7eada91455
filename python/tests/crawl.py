"""Runs the docs spider once: `python crawl.py START_URL SETTINGS_JSON FETCHED STATS`.

Every response's URL is appended to FETCHED (flushed at once, so a killed crawl leaves
what it fetched); the crawl's stats are written to STATS as JSON at the end."""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class DocsSpider(CrawlSpider):
    name = "docs"
    allowed_domains = ["127.0.0.1"]  # the offsite middleware compares hosts without the port
    rules = [Rule(LinkExtractor(), callback="page", follow=True)]

    def __init__(self, start: str, fetched: str, *args, **kwargs):
        self.start_urls = [start]
        self.fetched = open(fetched, "a", buffering=1)
        super().__init__(*args, **kwargs)

    async def start(self):
        # Filtered like every other request (Scrapy's own start requests are not), so that
        # the start page is fetched once per crawl, and once between crawler processes
        # sharing a scheduler.
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self._parse, dont_filter=False)

    def parse_start_url(self, response):
        return self.page(response)

    def page(self, response):
        self.fetched.write(response.url + "\n")
        return []


def main() -> None:
    start, settings, fetched, stats_path = sys.argv[1:5]
    base = {
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "DOWNLOAD_DELAY": 0,
    }
    base.update(json.loads(settings))
    process = CrawlerProcess(base)
    crawler = process.create_crawler(DocsSpider)
    process.crawl(crawler, start=start, fetched=fetched)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
    with open(stats_path, "w") as f:
        json.dump(stats, f)


if __name__ == "__main__":
    main()
