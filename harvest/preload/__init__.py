"""Broad-crawl preparation (preload): sources, merge, DNS check, redirect discovery, load."""
