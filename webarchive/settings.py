"""Settings for the web archive, read from the environment.

Every value has a default that suits the embedded demo (SQLite and a
filesystem broker under ``var/``); production sets ``DEBUG=0`` and at least
``SECRET_KEY``, ``ALLOWED_HOSTS``, ``DATABASE_URL`` and ``CELERY_BROKER_URL``.
The variables are listed in README.md.
"""

import os
import re
import socket
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from harvest.crawler import defaults as crawler  # plain values: the crawler defines its own defaults

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

VAR_DIR = Path(env("WEBARCHIVE_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DEBUG", default=True)

# Read as is: django-environ would take a value starting with "$" for the name
# of another variable, and Django's generated keys may start with one.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    # Only ever used by the demo and the tests; production must set its own.
    SECRET_KEY = "django-insecure-demo-key-not-for-production"  # noqa: S105

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off.")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Server-side fetches of user-supplied URLs (URL checks, crawls) refuse
# loopback, private, link-local and metadata addresses unless this is set.
WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = env.bool("WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES", default=DEBUG)

# Selection: the URL-count thresholds of the budgets (small < SMALL_MAX <=
# medium <= MEDIUM_MAX < large), and the online check of proposed URLs.
SELECTION_BUDGET_SMALL_MAX = env.int("SELECTION_BUDGET_SMALL_MAX", default=10_000)
SELECTION_BUDGET_MEDIUM_MAX = env.int("SELECTION_BUDGET_MEDIUM_MAX", default=100_000)
SELECTION_URL_CHECK_TIMEOUT = env.float("SELECTION_URL_CHECK_TIMEOUT", default=10.0)
SELECTION_URL_CHECK_MAX_REDIRECTS = env.int("SELECTION_URL_CHECK_MAX_REDIRECTS", default=10)
SELECTION_URL_CHECK_TOTAL_TIMEOUT = env.float("SELECTION_URL_CHECK_TOTAL_TIMEOUT", default=30.0)
# A file of trusted certification authorities for the URL check (PEM); empty: the usual ones (certifi).
SELECTION_URL_CHECK_CA_BUNDLE = env("SELECTION_URL_CHECK_CA_BUNDLE", default="")
SELECTION_URL_CHECK_USER_AGENT = env(
    "SELECTION_URL_CHECK_USER_AGENT", default="webarchive-url-check/1 (+legal deposit web archive)"
)

# Planning and job generation (harvest/). See docs/planning.md.
# Celery queues crawl jobs may be sent to; each harvest channel names one.
HARVEST_CRAWL_QUEUES = env.list("HARVEST_CRAWL_QUEUES", default=["crawl-high", "crawl-low"])
# An alias expires after this many days unless a curator renews it.
HARVEST_ALIAS_TIMEOUT_DAYS = env.int("HARVEST_ALIAS_TIMEOUT_DAYS", default=365)
# The template of the default configuration every new domain gets.
HARVEST_DEFAULT_TEMPLATE = env("HARVEST_DEFAULT_TEMPLATE", default="default")
# Job splitting (NetarchiveSuite's rules): the expected size of a domain with no
# earlier harvest; the largest/smallest expected size ratio in one job; the caps
# on domains and on expected objects per job.
HARVEST_DEFAULT_EXPECTED_OBJECTS = env.int("HARVEST_DEFAULT_EXPECTED_OBJECTS", default=5_000)
HARVEST_JOB_MAX_SIZE_RATIO = env.float("HARVEST_JOB_MAX_SIZE_RATIO", default=100.0)
HARVEST_JOB_MAX_DOMAINS_SNAPSHOT = env.int("HARVEST_JOB_MAX_DOMAINS_SNAPSHOT", default=10_000)
HARVEST_JOB_MAX_DOMAINS_SELECTIVE = env.int("HARVEST_JOB_MAX_DOMAINS_SELECTIVE", default=1_000)
HARVEST_JOB_MAX_OBJECTS = env.int("HARVEST_JOB_MAX_OBJECTS", default=50_000_000)
# How often (seconds) celery beat runs the launcher.
HARVEST_LAUNCHER_INTERVAL = env.float("HARVEST_LAUNCHER_INTERVAL", default=60.0)
# News definitions (docs/curation.md): the shortest interval between runs (minutes); the articles a
# news definition remembers as captured (the most recent); the articles one deeper run gets as seeds.
HARVEST_NEWS_MIN_MINUTES = env.int("HARVEST_NEWS_MIN_MINUTES", default=5)
HARVEST_NEWS_KNOWN_MAX = env.int("HARVEST_NEWS_KNOWN_MAX", default=50_000)
HARVEST_NEWS_FEED_MAX = env.int("HARVEST_NEWS_FEED_MAX", default=2_000)

# Crawling (harvest/crawler/ and its Celery tasks). See docs/harvesting.md.
# Where crawl workers write WARC files (until the storage nodes take them) and crawl logs.
HARVEST_WARC_DIR = Path(env("HARVEST_WARC_DIR", default=str(VAR_DIR / "warcs")))
HARVEST_SPOOL_DIR = Path(env("HARVEST_SPOOL_DIR", default=str(VAR_DIR / "crawl")))
# This machine's name among the crawl machines (docs/machines.md): the files a crawler writes here
# are ingested by the workers of this machine (their queue spool.<name>), which alone see its spool.
# It goes into WARC file names and crawl log names, where a dash or a dot would confuse a parser.
_HOST_NAME = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname().split(".")[0])[:63]
MACHINE_NAME = env("WEBARCHIVE_MACHINE", default=_HOST_NAME or "machine")
if not re.fullmatch(r"[A-Za-z0-9]{1,63}", MACHINE_NAME):
    raise ImproperlyConfigured(
        f"WEBARCHIVE_MACHINE must be 1 to 63 letters and digits (it goes into file names): {MACHINE_NAME!r}"
    )
# Post-crawl deduplication (docs/dedup.md): the directories a run started from the pages may read
# and write (empty: HARVEST_WARC_DIR only), and the time limit of one stage unit (seconds).
DEDUP_ALLOWED_ROOTS = [Path(path) for path in env.list("DEDUP_ALLOWED_ROOTS", default=[])]
DEDUP_UNIT_TIME_LIMIT = env.int("DEDUP_UNIT_TIME_LIMIT", default=6 * 3600)

# Storage nodes (docs/storage.md): how many nodes keep each WARC file by default (a harvest
# definition or collection may ask for more), how often each replica is re-hashed at least
# (days) and how often the audit runs (seconds; each round takes an even share), how often nodes
# are checked and repairs sent (seconds), and when a copy whose worker fell silent is taken over.
STORAGE_REPLICAS = env.int("STORAGE_REPLICAS", default=2)
STORAGE_AUDIT_DAYS = env.float("STORAGE_AUDIT_DAYS", default=30.0)
STORAGE_AUDIT_INTERVAL = env.float("STORAGE_AUDIT_INTERVAL", default=3600.0)
STORAGE_CHECK_INTERVAL = env.float("STORAGE_CHECK_INTERVAL", default=60.0)
# Seconds between two gatherings of the workers' and queues' state for the monitoring page (asking the
# broker takes seconds; the page shows the last answer and its age).
MONITORING_BROKER_INTERVAL = env.float("MONITORING_BROKER_INTERVAL", default=30.0)
STORAGE_COPY_STALE_SECONDS = env.int("STORAGE_COPY_STALE_SECONDS", default=120)
STORAGE_REPAIR_BATCH = env.int("STORAGE_REPAIR_BATCH", default=500)
# S3-compatible storage nodes (docs/storage.md, "S3-compatible nodes"): their endpoints and keys, by
# profile name, as JSON: {"name": {"endpoint_url": ..., "access_key": ..., "secret_key": ..., "region": ...}}.
# A node names its profile; the keys are never in the database nor on a page.
STORAGE_S3_PROFILES = env.json("STORAGE_S3_PROFILES", default={})
# The demo with an S3 node (docs/machines.md, "Trying it on one machine"): `WEBARCHIVE_DEMO_S3=1 make run`
# starts a SeaweedFS server on 127.0.0.1 (`manage.py demo_s3`, S3 on WEBARCHIVE_DEMO_S3_PORT and the
# next three ports for its master, volume and filer) with a node in it, and every process reaches it
# through the profile "demo-s3"; each file then gets three replicas (two directories, the object store).
DEMO_S3 = env.bool("WEBARCHIVE_DEMO_S3", default=False)
DEMO_S3_PORT = env.int("WEBARCHIVE_DEMO_S3_PORT", default=8333)
if DEMO_S3:
    STORAGE_S3_PROFILES.setdefault(
        "demo-s3",
        {
            "endpoint_url": f"http://127.0.0.1:{DEMO_S3_PORT}",
            "access_key": "webarchive-demo",
            "secret_key": "webarchive-demo-secret",
        },
    )
    STORAGE_REPLICAS = env.int("STORAGE_REPLICAS", default=3)
# BagIt packages of jobs for a preservation system (docs/storage.md, "Bags for a preservation
# system"): where the workers write the bag of each ended job once all its files are ingested (empty:
# no bag is made automatically; `manage.py bag_job` makes one), and the archive's name in them.
STORAGE_BAG_DIR = env("STORAGE_BAG_DIR", default="")
STORAGE_BAG_ORGANIZATION = env("STORAGE_BAG_ORGANIZATION", default="Web archive")
# WACZ packages of jobs (docs/storage.md, "WACZ packages"): where the workers write those asked for
# from a job's page, and where its download reads them.
STORAGE_WACZ_DIR = Path(env("STORAGE_WACZ_DIR", default=str(VAR_DIR / "wacz")))

# Broad-crawl preparation (docs/preload.md): DNS lookups in flight, and redirect discovery's
# timeout, domains in flight and the address asked for each host ({host}: the domain, www.domain).
PRELOAD_DNS_CONCURRENCY = env.int("PRELOAD_DNS_CONCURRENCY", default=100)
PRELOAD_REDIRECT_TIMEOUT = env.float("PRELOAD_REDIRECT_TIMEOUT", default=10.0)
PRELOAD_REDIRECT_CONCURRENCY = env.int("PRELOAD_REDIRECT_CONCURRENCY", default=50)
PRELOAD_REDIRECT_URL = env("PRELOAD_REDIRECT_URL", default="http://{host}/")
# Lists of at least PRELOAD_PARALLEL_BYTES are normalised by PRELOAD_PROCESSES processes.
PRELOAD_PROCESSES = env.int("PRELOAD_PROCESSES", default=os.cpu_count() or 1)
PRELOAD_PARALLEL_BYTES = env.int("PRELOAD_PARALLEL_BYTES", default=4_000_000)
# Connections merging and loading side by side (PostgreSQL; SQLite works on one).
PRELOAD_CONNECTIONS = env.int("PRELOAD_CONNECTIONS", default=2)
# Memory PostgreSQL may use for each sort of the merge and the load (SET LOCAL work_mem).
PRELOAD_WORK_MEM = env("PRELOAD_WORK_MEM", default="256MB")
PRELOAD_UPLOAD_DIR = Path(env("PRELOAD_UPLOAD_DIR", default=str(VAR_DIR / "preload")))
# The lists uploaded for one run, together: 64 MiB holds about 4 million domains (3 million, the
# largest national lists, take about 50 MB); larger lists are read from disk by preload_domains.
PRELOAD_MAX_UPLOAD_BYTES = env.int("PRELOAD_MAX_UPLOAD_BYTES", default=64 * 2**20)
# Addresses or networks a run's nameservers may be on besides the public ones (the archive's own
# resolver on its internal network); the others go under the address guard, as the crawler's.
PRELOAD_ALLOWED_NAMESERVERS = env.list("PRELOAD_ALLOWED_NAMESERVERS", default=[])

# Reports (docs/reports.md): the bounds of the domain size classes, in URLs collected per domain
# ("10,10000": fewer than 10, 10 to 10,000, more than 10,000).
REPORT_SIZE_CLASSES = sorted(env.list("REPORT_SIZE_CLASSES", cast=int, default=[10, 10000]))

HARVEST_WARC_PREFIX = env("HARVEST_WARC_PREFIX", default="webarchive")
HARVEST_WARC_MAX_SIZE = env.int("HARVEST_WARC_MAX_SIZE", default=1_000_000_000)
# The crawler's name, with the page that tells webmasters who we are.
HARVEST_CONTACT_URL = env("HARVEST_CONTACT_URL", default="http://127.0.0.1:8000/about/crawler/")
HARVEST_USER_AGENT = env("HARVEST_USER_AGENT", default=f"webarchive-bot/1.0 (+{HARVEST_CONTACT_URL})")
# Fetch threads shared by all the site crawls of one worker process (a waiting site holds none).
HARVEST_CRAWL_THREADS = env.int("HARVEST_CRAWL_THREADS", default=crawler.FETCH_THREADS)
# The most site crawls one crawl worker process holds at once (harvest.consumer: none holds a
# thread; 0 runs each on a thread of the task pool instead), and the resident memory (MB) above
# which it takes no new site until some have ended.
HARVEST_SITES_PER_WORKER = env.int("HARVEST_SITES_PER_WORKER", default=1000)
HARVEST_WORKER_MEMORY_MB = env.int("HARVEST_WORKER_MEMORY_MB", default=1024)
# Politeness across sites: the least time (s) between the starts of two requests of one crawl
# worker process to one IP address, whichever domains they are for (0: each site only keeps its
# own delay). The domains of one shared host are crawled together at this pace.
HARVEST_IP_MIN_INTERVAL = env.float("HARVEST_IP_MIN_INTERVAL", default=0.25)
# Nameservers ("address" or "address:port", comma-separated) the crawl workers ask instead of the
# system's resolver (a caching resolver of their own, as broad crawls use); empty: the system's.
HARVEST_DNS_SERVERS = env.list("HARVEST_DNS_SERVERS", default=[])
HARVEST_CONNECT_TIMEOUT = env.float("HARVEST_CONNECT_TIMEOUT", default=crawler.CONNECT_TIMEOUT)
HARVEST_READ_TIMEOUT = env.float("HARVEST_READ_TIMEOUT", default=crawler.READ_TIMEOUT)
HARVEST_MAX_RESPONSE_BYTES = env.int("HARVEST_MAX_RESPONSE_BYTES", default=crawler.MAX_RESPONSE_BYTES)
HARVEST_MAX_FETCH_SECONDS = env.float("HARVEST_MAX_FETCH_SECONDS", default=crawler.MAX_FETCH_SECONDS)
# What one hostile site can make a worker hold (docs/harvesting.md, "Limits a hostile site meets"):
# URLs waiting per site, decoded bytes of a document read for links (of an HTML page, whose parse
# costs some 30 times its size), links kept per document.
HARVEST_MAX_QUEUED_URLS = env.int("HARVEST_MAX_QUEUED_URLS", default=crawler.MAX_QUEUED_URLS)
HARVEST_EXTRACT_MAX_BYTES = env.int("HARVEST_EXTRACT_MAX_BYTES", default=crawler.EXTRACT_MAX_BYTES)
HARVEST_EXTRACT_MAX_HTML_BYTES = env.int(
    "HARVEST_EXTRACT_MAX_HTML_BYTES", default=crawler.EXTRACT_MAX_HTML_BYTES
)
HARVEST_EXTRACT_MAX_LINKS = env.int("HARVEST_EXTRACT_MAX_LINKS", default=crawler.EXTRACT_MAX_LINKS)
# Whether an invalid TLS certificate (expired, self-signed, wrong name) stops a fetch. Off, as in
# Heritrix: the archive keeps what a visitor saw after clicking through the browser's warning.
HARVEST_VERIFY_TLS = env.bool("HARVEST_VERIFY_TLS", default=False)
# Browser capture (docs/harvesting.md): browsers per crawl worker process, each rendering one page at a
# time; the chromium they run (Debian's by default); the JavaScript memory of one page, in MB (a page
# over it crashes alone); the answers one site crawl keeps to give its pages again without asking.
HARVEST_BROWSERS = env.int("HARVEST_BROWSERS", default=crawler.BROWSERS)
HARVEST_BROWSER_EXECUTABLE = env("HARVEST_BROWSER_EXECUTABLE", default="") or None
HARVEST_BROWSER_HEAP_MB = env.int("HARVEST_BROWSER_HEAP_MB", default=crawler.BROWSER_HEAP_MB)
HARVEST_BROWSER_CACHE_BYTES = env.int("HARVEST_BROWSER_CACHE_BYTES", default=crawler.RENDER_CACHE_BYTES)
# Trap limits: a path segment repeated more than N times; distinct URLs under one directory;
# distinct parameter sets of one script.
HARVEST_TRAP_PATH_REPEATS = env.int("HARVEST_TRAP_PATH_REPEATS", default=crawler.TRAP_PATH_REPEATS)
HARVEST_TRAP_PER_DIRECTORY = env.int("HARVEST_TRAP_PER_DIRECTORY", default=crawler.TRAP_PER_DIRECTORY)
HARVEST_TRAP_PER_SCRIPT = env.int("HARVEST_TRAP_PER_SCRIPT", default=crawler.TRAP_PER_SCRIPT)
# Calendar traps: dates (a year and a month) further back or further ahead than this.
HARVEST_TRAP_CALENDAR_YEARS_BACK = env.int(
    "HARVEST_TRAP_CALENDAR_YEARS_BACK", default=crawler.TRAP_CALENDAR_YEARS_BACK
)
HARVEST_TRAP_CALENDAR_YEARS_AHEAD = env.int(
    "HARVEST_TRAP_CALENDAR_YEARS_AHEAD", default=crawler.TRAP_CALENDAR_YEARS_AHEAD
)
# How often (seconds) a running site crawl writes its progress and looks for a stop request.
HARVEST_PROGRESS_INTERVAL = env.float("HARVEST_PROGRESS_INTERVAL", default=2.0)
# Seconds between two rolls of a crawl process's part of a job's crawl log into a WARC file of the job
# (a part is also stored when the process's last site of the job ends): how late the job page shows the
# log of a crawl running on another machine.
HARVEST_CRAWL_LOG_ROLL_SECONDS = env.float("HARVEST_CRAWL_LOG_ROLL_SECONDS", default=600.0)
# A started job none of whose sites has made progress for this long is failed.
HARVEST_STALL_SECONDS = env.int("HARVEST_STALL_SECONDS", default=900)
# The curators' quality view of a job (docs/quality.md): a site is flagged for "many errors" when its
# errors are more than this share of its URLs, and for "few URLs" when it ended with fewer than this.
REPORT_ERROR_SHARE = env.float("REPORT_ERROR_SHARE", default=0.2)
REPORT_FEW_URLS = env.int("REPORT_FEW_URLS", default=10)

# Access: replay in pywb, its own process (``manage.py replay``; docs/access.md). REPLAY_URL is where
# readers' browsers reach it; WEBARCHIVE_URL is where pywb reaches this application (CDX API, WARC
# bytes) and where its banner links back to.
REPLAY_URL = env("REPLAY_URL", default="http://127.0.0.1:8080/")
REPLAY_COLLECTION = env("REPLAY_COLLECTION", default="archive")
# Where `manage.py replay` makes pywb listen: loopback unless told otherwise (the replay gate in front
# of pywb lets through only what the application's access rules allowed, see storage.replay_gate);
# the port is REPLAY_PORT, else that of REPLAY_URL, else 8080.
REPLAY_HOST = env("REPLAY_HOST", default="127.0.0.1")
REPLAY_PORT = env.int("REPLAY_PORT", default=None)
# How long a replay ticket (the application's signed leave to replay, bound to one address) lasts;
# the gate sends a browser whose ticket ran out back to the application for a new one.
REPLAY_TICKET_SECONDS = env.int("REPLAY_TICKET_SECONDS", default=600)

# Who may read what (storage.access, docs/access.md): the reading rooms' networks (CIDR, comma
# separated), whether anonymous visitors may read what is open at all, and, behind a reverse proxy,
# the header that carries the client's address (the proxy's own address is in REMOTE_ADDR).
ACCESS_READING_ROOMS = env.list("ACCESS_READING_ROOMS", default=[])
ACCESS_ANONYMOUS = env.bool("ACCESS_ANONYMOUS", default=DEBUG)
ACCESS_CLIENT_ADDRESS_HEADER = env("ACCESS_CLIENT_ADDRESS_HEADER", default="")
# The most captures one /cdx query returns (a larger limit is lowered to it).
CDX_MAX_LIMIT = env.int("CDX_MAX_LIMIT", default=100_000)
# The largest body of CDXJ/CDX lines an outside crawler may POST to /api/cdx/ at once (bytes).
CDX_WRITE_MAX_BYTES = env.int("CDX_WRITE_MAX_BYTES", default=4 * 1024 * 1024)
# The directories from which POST /api/warc-files/register/ may register outside crawlers' WARC
# files (comma separated; empty: registering through the API is refused, `register_warcs` only).
CDX_WRITE_ALLOWED_ROOTS = [Path(path) for path in env.list("CDX_WRITE_ALLOWED_ROOTS", default=[])]
WEBARCHIVE_URL = env(
    "WEBARCHIVE_URL",
    default=f"http://{env('WEBARCHIVE_HOST', default='127.0.0.1')}:{env('WEBARCHIVE_PORT', default='8000')}/",
)

INSTALLED_APPS = [
    "webarchive.apps.WebArchiveAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "axes",
    "django_htmx",
    "bootstrap",
    "webarchive",
    "selection",
    "harvest",
    "storage",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Early, so that every answer gets the Content-Security-Policy header (CONTENT_SECURITY_POLICY).
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The interface language a person chose, over the browser's (LocaleMiddleware's guess).
    "webarchive.middleware.UserLanguageMiddleware",
    # Where the request comes from (a reading room?), for the access rules of captures.
    "storage.access.AccessAddressMiddleware",
    "webarchive.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, as django-axes asks: it turns a lock-out into its response.
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy (django-csp) on every answer: everything comes from this site's own static
# files (Bootstrap, htmx, … from Python packages through whitenoise; no CDN), scripts only from files
# (no inline <script>, no on…="" handler, no eval), styles only from style sheets (no style="": pages
# use the classes of static/webarchive/webarchive.css), nothing frames our pages. Bootstrap's CSS draws
# its small icons (select arrows, close buttons) as data: SVG images. One view widens it for itself:
# the Swagger UI of the API (webarchive/urls.py). pywb, its own process, sets its own headers.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

ROOT_URLCONF = "webarchive.urls"
WSGI_APPLICATION = "webarchive.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webarchive.context_processors.navigation",
            ],
        },
    },
]

# Database: SQLite under var/ for the demo, PostgreSQL (the reference) in production.
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'webarchive.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web, the worker and beat share the file: wait for locks instead of
    # failing, and take the write lock at the start of each transaction.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Many short queries: PostgreSQL's JIT compiles every plan whose estimated cost is high (a
    # full-text search's, a report's) and spends more time compiling than running it. Options given
    # in DATABASE_URL (?options=...) are kept.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")
    # Kept connections: a new PostgreSQL connection costs a request 7 to 10 ms (connecting, then a new
    # backend's empty catalog caches), more than the CDX lookup itself (docs/benchmarks.md, "CDX
    # lookup"). Django's persistent connections rather than psycopg's pool: no other package, and the
    # bound follows from the processes: one connection per thread that uses the database, i.e. per
    # gunicorn worker thread and per prefork Celery child; thread-pool Celery workers close theirs at
    # the end of each task (webarchive/celery.py), so they hold one per running task, as before. A
    # pool bounds a process by its size instead, and a thread that holds its connection long (a
    # streamed export, a crawl worker's watcher) then makes the others wait for one, or fail.
    # Reopened after 60 s, so a backend's memory and a changed server setting do not live forever;
    # checked before its first use in each request or task, so a connection the server dropped
    # (restart, pg_terminate_backend, failover) is replaced instead of failing the request.
    # ?conn_max_age= and ?conn_health_checks= in DATABASE_URL win (conn_max_age=0: a connection per
    # request, as with Django's default).
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    # django-environ gives ?conn_health_checks=false as the string "false", which is true.
    checks = str(DATABASES["default"].get("CONN_HEALTH_CHECKS", True)).strip().lower()
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = checks in ("1", "true", "yes", "on")
# SQLite (the demo, the tests) keeps Django's default of a connection per request: opening the file
# costs microseconds, and the demo's processes share it through its locks.
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Cache: what is rendered once per change (the reports dashboard). Each process's own memory by
# default; a shared one (redis://host:6379/1) in production, so that each change is rendered once.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}

# Login: local accounts always; the institution's LDAP directory when configured.
AUTHENTICATION_BACKENDS = [
    # django-axes first, so that a locked-out client is refused before any check.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Failed-login throttling (django-axes): after AXES_FAILURE_LIMIT failures for
# one username from one address, that pair is locked for AXES_COOLOFF_MINUTES.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_MINUTES", default=15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = env.bool("AXES_VERBOSE", default=False)
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_IPWARE_META_PRECEDENCE_ORDER = env.list("AXES_IPWARE_META_PRECEDENCE_ORDER", default=["REMOTE_ADDR"])

from webarchive.ldap_settings import *  # noqa: E402, F403  (AUTH_LDAP_* from the environment)

if AUTH_LDAP_SERVER_URI:  # noqa: F405
    AUTHENTICATION_BACKENDS.insert(1, "webarchive.ldap.RoleMappingLDAPBackend")

from webarchive.oidc_settings import *  # noqa: E402, F403  (OIDC_* from the environment)

if OIDC_RP_CLIENT_ID:  # noqa: F405
    AUTHENTICATION_BACKENDS.insert(1, "webarchive.oidc.RoleMappingOIDCBackend")

LANGUAGE_CODE = env("LANGUAGE_CODE", default="en")
LANGUAGES = [("en", _("English")), ("fr", _("French"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env("TIME_ZONE", default="Europe/Paris")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
MEDIA_ROOT = VAR_DIR / "media"

# REST API: the same role rules as the pages (webarchive.permissions).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["webarchive.api.permissions.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": ["webarchive.api.filters.FilterBackend"],  # ids bounded
    "DEFAULT_PAGINATION_CLASS": "webarchive.api.pagination.PageNumbers",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webarchive.api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Web archive API",
    "DESCRIPTION": "Selection, planning, harvesting, storage and reports of the web archive.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema follows the API's rules (logged-in users), not drf-spectacular's AllowAny.
    "SERVE_PERMISSIONS": ["webarchive.api.permissions.RolePermission"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The errors each operation may answer (400, 401, 403, 404), after the enums are named.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webarchive.api.schema.document_errors",
    ],
    # The same choices serve records and collections' defaults: one name each.
    "ENUM_NAME_OVERRIDES": {
        "BudgetEnum": "selection.choices.Budget",
        "FrequencyEnum": "selection.choices.Frequency",
        "DepthEnum": "selection.choices.Depth",
        "RecordStatusEnum": "selection.choices.RecordStatus",
        "JobStatusEnum": "harvest.choices.JobStatus",
        "HarvestKindEnum": "harvest.choices.HarvestKind",
    },
}

# Celery: a broker that needs no server (files under var/broker) by default;
# Redis or RabbitMQ in production (CELERY_BROKER_URL).
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        "control_folder": str(_broker_dir / "control"),
    }
    # kombu's filesystem transport expects its folders to exist.
    for _folder in ("queue", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=24 * 3600)
CELERY_TASK_ALWAYS_EAGER = False
# How often the external links of ended site crawls are counted in the discovered sites (seconds).
DISCOVERY_INTERVAL = env.float("DISCOVERY_INTERVAL", default=900.0)
# How often change rates are measured again, and boosts that have ended reverted (seconds).
CHANGE_RATES_INTERVAL = env.float("CHANGE_RATES_INTERVAL", default=6 * 3600.0)
BOOST_REVERT_INTERVAL = env.float("BOOST_REVERT_INTERVAL", default=3600.0)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "harvest-launcher": {"task": "harvest.launch_due", "schedule": HARVEST_LAUNCHER_INTERVAL},
    "harvest-watchdog": {"task": "harvest.fail_stalled", "schedule": 60.0},
    "storage-check": {"task": "storage.check", "schedule": STORAGE_CHECK_INTERVAL},
    "monitoring-broker": {"task": "harvest.gather_broker", "schedule": MONITORING_BROKER_INTERVAL},
    "storage-audit": {"task": "storage.audit", "schedule": STORAGE_AUDIT_INTERVAL},
    "harvest-discover-sites": {"task": "harvest.discover_sites", "schedule": DISCOVERY_INTERVAL},
    "storage-change-rates": {"task": "storage.refresh_change_rates", "schedule": CHANGE_RATES_INTERVAL},
    "selection-revert-boosts": {"task": "selection.revert_boosts", "schedule": BOOST_REVERT_INTERVAL},
}
CELERY_TIMEZONE = TIME_ZONE

# Production hardening; each can be relaxed from the environment where a
# proxy in front does the job. `manage.py check --deploy` passes with these.
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
    if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=12 * 3600)

# One handler (the root's): Django's own console handler would print its records a second time. A
# 403 or 404 is one line, without the traceback of the exception behind it (webarchive.logs).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_on_one_line": {"()": "webarchive.logs.ClientErrorsOnOneLine"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django": {"handlers": [], "propagate": True},
        "django.request": {"filters": ["client_errors_on_one_line"]},
        "django_auth_ldap": {"level": env("LDAP_LOG_LEVEL", default="WARNING")},
        # django-axes says four lines at every successful login: its warnings (lockouts) are enough.
        "axes": {"level": "WARNING"},
    },
}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # The demo's broker has no host, and kombu warns about it on every connection: nothing to do.
    LOGGING["loggers"]["kombu.connection"] = {"level": "ERROR"}
