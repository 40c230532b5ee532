"""Post-crawl deduplication of WARC and ARC files (the WARCsum / WARCrefs pipeline), without Django.

See :mod:`storage.dedup.pipeline` for the stages and how a run is kept and resumed.
"""
