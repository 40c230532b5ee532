"""What the crawler does when it is not told otherwise: each default value, defined once.

The crawler's own signatures take their defaults from here (``fetch.Fetcher``, ``site.SiteSettings``,
``traps.TrapGuard``, ``extractors.ExtractOptions``, ``tab.RenderOptions``, ``engine.CrawlEngine``,
``browser.BrowserPool``), and so do the deployment's ``HARVEST_*`` settings (``webarchive.settings``).
No imports: the settings module loads this one.
"""

# Fetching (HARVEST_CONNECT_TIMEOUT, HARVEST_READ_TIMEOUT, HARVEST_MAX_RESPONSE_BYTES,
# HARVEST_MAX_FETCH_SECONDS; the digest algorithm: a harvest template's).
CONNECT_TIMEOUT = 10.0  # seconds
READ_TIMEOUT = 30.0  # seconds without a byte from the server
MAX_RESPONSE_BYTES = 100 * 1024 * 1024  # of one body; the rest is cut (truncated: length)
MAX_FETCH_SECONDS = 600.0  # of one fetch, however steadily the server sends
DIGEST_ALGORITHM = "sha256"

# Fetch threads of one process, shared by its site crawls (HARVEST_CRAWL_THREADS).
FETCH_THREADS = 8

# Scope and politeness of a site crawl (a harvest template gives its own).
DEPTH_POLICY = "host"
CLICKS = 1
MAX_HOPS = 20
MIN_DELAY = 1.0  # seconds between two requests to a site, at least
MAX_DELAY = 30.0  # and at most
DELAY_FACTOR = 5.0  # times the duration of the last fetch

# What one hostile site can make the worker hold (docs/harvesting.md, "Limits a hostile site meets";
# HARVEST_MAX_QUEUED_URLS, HARVEST_EXTRACT_MAX_BYTES, HARVEST_EXTRACT_MAX_HTML_BYTES,
# HARVEST_EXTRACT_MAX_LINKS).
MAX_QUEUED_URLS = 200_000  # URLs waiting in a site's frontier; links found beyond are dropped, counted
EXTRACT_MAX_BYTES = 16 * 1024 * 1024  # of a decoded document read for links (sitemaps, CSS…)
EXTRACT_MAX_HTML_BYTES = 4 * 1024 * 1024  # of an HTML page: its parse costs ~30 times its size
EXTRACT_MAX_LINKS = 50_000  # per document; those beyond are counted, not queued

# Streamed audio and video (HLS, DASH): the segments of every variant ("all") or of the best one ("best");
# a harvest template gives its own.
STREAM_VARIANTS = "all"

# Crawler traps (HARVEST_TRAP_*): a path segment repeated more than N times, distinct URLs under one
# directory, distinct parameter sets of one script, dates further back or ahead than this.
TRAP_PATH_REPEATS = 2
TRAP_PER_DIRECTORY = 5_000
TRAP_PER_SCRIPT = 500
TRAP_CALENDAR_YEARS_BACK = 30
TRAP_CALENDAR_YEARS_AHEAD = 2

# Browser capture: browsers per process and the JavaScript memory of one page (HARVEST_BROWSERS,
# HARVEST_BROWSER_HEAP_MB), the answers a site crawl keeps for its pages (HARVEST_BROWSER_CACHE_BYTES),
# and what a template gives for one page.
BROWSERS = 2
BROWSER_HEAP_MB = 512
RENDER_CACHE_BYTES = 16 * 1024 * 1024
RENDER_PAGE_SECONDS = 30.0
RENDER_BEHAVIOUR_SECONDS = 10.0
VIEWPORT = (1366, 768)
