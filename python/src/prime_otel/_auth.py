"""Who the trainer is to its collector: the platform key it sends, and where.

A multi-tenant gateway holds no platform key of its own: it lets a trainer in
by the trainer's own key, the one ``prime_runs`` takes (``init(api_key=)``,
else ``PRIME_API_KEY``), sent as ``Authorization: Bearer <key>`` with every
request to the collector (the OTLP exports and the run status route). A
collector that holds its own key does not look at it.

Decisions, and why:

- **Never in clear text off the host.** The key goes only to an ``https://``
  endpoint or to a loopback one (``127.0.0.0/8``, ``::1``, ``localhost``).
  Over plain http to any other host it is withheld, with one warning naming
  the setting and the endpoint: a refused request (the collector answers 401,
  and the trainer hears it) is better than a key readable on the network.
  ``api_key=`` does not override this. The rule reads the URL, not DNS: a
  name that happens to resolve to 127.0.0.1 is another host.
- **The OTel variables win.** ``OTEL_EXPORTER_OTLP_LOGS_HEADERS``, else
  ``OTEL_EXPORTER_OTLP_HEADERS``, are read as the specification says. An
  ``authorization`` header there is sent in place of the key, wherever the
  endpoint is, as every OTel SDK sends it (with one warning when that is in
  clear text off the host): it was written for that endpoint on purpose.
- **The key is shown nowhere.** It must be visible ASCII (what a Bearer token
  is), so no header error can echo it; it is kept behind a ``repr`` that says
  ``[REDACTED]``; and whatever a collector answers is scrubbed of it before
  that text reaches a message (a collector's authenticator may echo what it
  was sent).
"""

import ipaddress
import logging
import re
import urllib.parse
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import ConfigurationError

logger = logging.getLogger("prime_otel")

API_KEY_ENV = "PRIME_API_KEY"
API_KEY_ARG = "init(api_key=)"
HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
AUTHORIZATION = "authorization"
REDACTED = "[REDACTED]"
#: Header names the transport sets itself: one from the variables would be a second copy.
RESERVED = ("content-type", "content-length", "content-encoding", "transfer-encoding", "host", "connection")
#: An OTLP header value shorter than this is not taken for a secret to scrub
#: (``x-team=a`` would blank every ``a`` of a message); the key always is.
SCRUB_MIN = 8

_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9a-z]+")  # an HTTP field name (RFC 9110 token), lower case
_VISIBLE = re.compile(r"[\x21-\x7e]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a field value may hold a tab, nothing else below 0x20


class Secret:
    """A value that no ``repr``, ``str`` or format shows."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return REDACTED


class Credentials:
    """What every request to one collector URL carries to be let in.
    ``source`` names where its authorization came from (``PRIME_API_KEY``,
    ``init(api_key=)`` or an ``OTEL_EXPORTER_OTLP_*HEADERS`` variable), never
    what it is; ``withheld`` names the key's setting when the rule kept the
    key from this URL."""

    def __init__(
        self,
        headers: Optional[Mapping[str, str]] = None,
        *,
        source: Optional[str] = None,
        withheld: Optional[str] = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self._headers = dict(headers or {})
        self.source = source
        self.withheld = withheld
        # Longest first, so a header value is scrubbed whole before the token inside it.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def headers(self) -> Dict[str, str]:
        """The headers to send (a copy)."""
        return dict(self._headers)

    @property
    def names(self) -> List[str]:
        return sorted(self._headers)

    def scrub(self, text: str) -> str:
        """``text`` with every secret these credentials carry replaced."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def refusal(self, status: int) -> str:
        """Why a collector answered ``status`` (401 or 403), as the rest of a
        sentence whose subject is the collector."""
        if self.source:
            return f"refused the key from {self.source} ({status})"
        if self.withheld:
            return (f"wants a key ({status}), and the one from {self.withheld} was not sent: the endpoint is "
                    "plain http to another host; use https, or a collector on loopback")
        return (f"wants a key ({status}) and none was sent: set {API_KEY_ENV} or {API_KEY_ARG}, "
                f"or an authorization header in {HEADERS_ENV}")

    def __repr__(self) -> str:
        return f"Credentials(headers={self.names}, source={self.source!r}, withheld={self.withheld!r})"


def may_carry_key(url: str) -> bool:
    """Whether the key may travel to ``url``: over TLS, or without leaving the host."""
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback(parsed.hostname or ""))


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1`` (also as ``::ffff:127.x.y.z``), by the name alone."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def otlp_headers(environ: Mapping[str, str], signal: str = "logs") -> Tuple[Dict[str, str], Optional[str]]:
    """The headers of ``OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS``, else of
    ``OTEL_EXPORTER_OTLP_HEADERS`` (an empty variable counts as unset; the
    signal's variable replaces the general one whole, as the SDKs do), and
    the variable they came from. The format is the specification's:
    comma-separated ``name=value`` pairs, percent-decoded, names in lower
    case, the last of a repeated name winning. A pair that is not one, or
    that no header can carry, is left out with a warning naming the variable
    and the header, never its value."""
    variable = f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS"
    raw = environ.get(variable) or ""
    if not raw.strip():
        variable, raw = HEADERS_ENV, environ.get(HEADERS_ENV) or ""
    if not raw.strip():
        return {}, None
    headers: Dict[str, str] = {}
    for position, pair in enumerate(raw.split(","), 1):
        if not pair.strip():
            continue
        name, eq, value = pair.partition("=")
        name = urllib.parse.unquote(name).strip().lower()
        value = urllib.parse.unquote(value).strip()
        problem = _header_problem(name, value) if eq else "it is not name=value"
        if problem:
            # A pair with no "=" may be a bare token: only a name that is one is shown.
            shown = name if eq and _NAME.fullmatch(name) else f"pair {position}"
            logger.warning("prime_otel: %s: %s is left out: %s", variable, shown, problem)
            continue
        headers[name] = value
    return headers, variable


def _header_problem(name: str, value: str) -> str:
    if not _NAME.fullmatch(name):
        return "its name is not an HTTP header name"
    if name in RESERVED:
        return "the package sets that header itself"
    if _CONTROL.search(value):
        return "its value holds a control character"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return "its value holds characters a header cannot carry (percent-encode them)"
    return ""


def platform_key(api_key: Optional[Secret], environ: Mapping[str, str]) -> Tuple[Optional[Secret], Optional[str]]:
    """The trainer's platform key and where it came from: ``init(api_key=)``,
    else ``PRIME_API_KEY``; blank is none. A key that a header cannot carry
    as one Bearer token is refused here, without showing it."""
    if api_key is not None and api_key.reveal().strip():
        key, source = api_key.reveal().strip(), API_KEY_ARG
    elif (environ.get(API_KEY_ENV) or "").strip():
        key, source = (environ.get(API_KEY_ENV) or "").strip(), API_KEY_ENV
    else:
        return None, None
    if not _VISIBLE.fullmatch(key):
        del key  # not even in a traceback's locals
        raise ConfigurationError(
            f"{source} is not a platform key: it holds spaces, control or non-ASCII characters "
            "(give the key alone, without 'Bearer'; the value is not shown)"
        )
    return Secret(key), source


def for_collector(
    urls: Sequence[str],
    *,
    api_key: Optional[Secret],
    environ: Mapping[str, str],
    signal: str = "logs",
) -> List[Credentials]:
    """The credentials for each of ``urls`` (the OTLP URL and the status
    route's), with at most one warning for a key withheld and one for an
    authorization header sent in clear text off the host."""
    headers, variable = otlp_headers(environ, signal)
    key, key_source = platform_key(api_key, environ)
    secrets = [v for v in headers.values() if len(v) >= SCRUB_MIN]
    given = headers.get(AUTHORIZATION)
    if given is not None:
        secrets += [given, given.partition(" ")[2].strip()]
    if key is not None:
        secrets += [key.reveal(), "Bearer " + key.reveal()]

    result: List[Credentials] = []
    withheld: List[str] = []
    clear: List[str] = []
    for url in urls:
        sent = dict(headers)
        if given is not None:
            result.append(Credentials(sent, source=variable, secrets=secrets))
            if not may_carry_key(url):
                clear.append(url)
        elif key is not None and may_carry_key(url):
            sent[AUTHORIZATION] = "Bearer " + key.reveal()
            result.append(Credentials(sent, source=key_source, secrets=secrets))
        else:
            result.append(Credentials(sent, withheld=key_source if key is not None else None, secrets=secrets))
            if key is not None:
                withheld.append(url)
    if withheld:
        logger.warning(
            "prime_otel: the platform key from %s is not sent to %s: that is plain http to another host, where the key "
            "would cross the network in clear text; use https (or a collector on loopback). A collector that wants "
            "the key will refuse the run",
            key_source, " and ".join(_origins(withheld)),
        )
    if clear:
        logger.warning(
            "prime_otel: the authorization header from %s goes to %s in clear text (plain http to another host); use https",
            variable, " and ".join(_origins(clear)),
        )
    return result


def _origins(urls: Sequence[str]) -> List[str]:
    """Each URL's scheme, host and port, once: where a key would go, not the route."""
    seen: List[str] = []
    for url in urls:
        parsed = urllib.parse.urlsplit(url)
        origin = f"{parsed.scheme}://{parsed.netloc.rpartition('@')[2]}"
        if origin not in seen:
            seen.append(origin)
    return seen
