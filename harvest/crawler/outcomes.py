"""How fetches and site crawls end, as codes: the closed vocabularies shared with the Django side.

The crawler writes these values (a site crawl's stop reason, a fetch's error code in the crawl log, a
failed site's error code in its report); the models' stop reasons (``harvest.choices.StopReason``)
are built from them and the monitoring page (``harvest.monitoring``) reads them, never the English
text that goes with them for people to read. No imports: the Django side loads this module with
its models.
"""

from enum import StrEnum

# Why a site crawl ended (SiteCrawl.stop_reason). harvest.choices.StopReason adds, for a limit,
# whether it was the harvest's or the configuration's.
COMPLETED = "completed"
OBJECT_LIMIT = "object-limit"
BYTE_LIMIT = "byte-limit"
TIME_LIMIT = "time-limit"
OPERATOR = "operator"
FAILED = "failed"


class FetchError(StrEnum):
    """Why a fetch got no response (``Exchange.error_code``; ``Exchange.error`` says it in words)."""

    REFUSED = "refused"  # the address guard refused the host's address (loopback, private, metadata…)
    DNS = "dns"  # the host name did not resolve, or the resolver did not answer in time
    CONNECTION_REFUSED = "connection-refused"  # nothing listens at that address and port
    CONNECT = "connect"  # the connection could not be made for another reason (unreachable…)
    CONNECT_TIMEOUT = "connect-timeout"  # the connection was not accepted in time
    TIMEOUT = "timeout"  # connected, but the answer did not come in time
    TLS = "tls"  # the TLS handshake failed (certificate, protocol version…)
    DISCONNECTED = "disconnected"  # the server closed the connection without a response
    RESET = "reset"  # the connection was reset or broken during the exchange
    PROTOCOL = "protocol"  # the answer is not valid HTTP (too many headers, a line too long…)
    INVALID_URL = "invalid-url"  # the URL cannot be asked for (unparsable host, other scheme…)
    INTERRUPTED = "interrupted"  # the crawl ended the fetch (an operator's stop, the time limit)
    OTHER = "other"  # anything else: the text says what


class CrawlError(StrEnum):
    """Why a site crawl failed (``SiteCrawl.error_code``, and ``error_code`` in its report)."""

    NO_VALID_SEED = "no-valid-seed"  # no seed is a valid http(s) URL: nothing to crawl
    NO_SEED_FETCHED = "no-seed-fetched"  # no seed got an answer
    BROKEN = "crawler-broken"  # the crawler itself broke (a fault of ours, not of the site)
