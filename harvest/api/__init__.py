"""The REST API of the planning side, and the crawl feed."""
