"""One OTLP/HTTP request at a time to the collector, and what its answer means.

Why not the SDK's ``OTLPLogExporter``: it retries a batch for about 7 s and
then gives it up, and the processor in front of it reports a flush as done
after a failed export. A trainer whose collector starts late or restarts
would lose data without a word. Here a request is one attempt with a timeout
the caller bounds; whether to try again is the queue's decision
(``_delivery``), which keeps the records until the collector takes them.

The connection belongs to the process that opened it: a forked child that
finds the parent's connection opens its own, so two processes never write to
one socket.

The answer is classified as the OTLP/HTTP specification says: 429, 502, 503
and 504 (and no answer at all) may pass, with ``Retry-After`` honoured; any
other status is final for that request. A 200 may carry a partial success
whose rejected records are final too. A 401 or 403 is the collector refusing
the trainer's credentials (``_auth``): final, and said as such, naming where
the key came from; an answer's text is scrubbed of the key before it is kept.

TLS: an ``https://`` endpoint is verified against the system's trust store,
or against ``OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE`` (else
``OTEL_EXPORTER_OTLP_CERTIFICATE``), a PEM file of CA certificates that
replaces it, as the OTel SDKs read it.
"""

import gzip
import http.client
import os
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Mapping, Optional

from ._auth import Credentials
from .errors import ConfigurationError

RETRYABLE_STATUS = (429, 502, 503, 504)
#: The collector did not let the sender in.
REFUSED_KEY_STATUS = (401, 403)
#: How much of an error body is kept for a message.
ERROR_BODY_BYTES = 512


@dataclass
class Outcome:
    """One request's answer. ``retry`` is True when the same request may
    succeed later (after ``retry_after`` seconds when the server said);
    ``rejected`` counts records a 200 refused; ``error`` says what went wrong
    (without the URL, which the caller names); ``refused_key`` is a 401 or
    403: the collector would not let this sender in."""

    ok: bool
    retry: bool = False
    retry_after: Optional[float] = None
    rejected: int = 0
    status: Optional[int] = None
    error: str = ""
    refused_key: bool = False


class Transport:
    """POSTs bodies to one URL, keeping one connection per process."""

    def __init__(
        self,
        url: str,
        credentials: Optional[Credentials] = None,
        compression: str = "none",
        tls: Optional[ssl.SSLContext] = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"{url!r} is not an http(s) URL")
        self.url = url
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self._path = parsed.path or "/"
        if parsed.query:
            self._path += "?" + parsed.query
        self._credentials = credentials or Credentials()
        self._tls = tls
        self._gzip = compression == "gzip"
        self._conn: Optional[http.client.HTTPConnection] = None
        self._pid = os.getpid()

    def post(self, body: bytes, content_type: str, timeout: float) -> Outcome:
        headers = self._credentials.headers()
        headers["Content-Type"] = content_type
        if self._gzip:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        try:
            conn = self._connection(timeout)
            conn.request("POST", self._path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
        except socket.timeout:
            self.close()
            return Outcome(False, retry=True, error=f"no answer within {timeout:.1f}s")
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            return Outcome(False, retry=True, error=_describe(exc))
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        status = response.status
        if 200 <= status < 300:
            rejected, why = _rejected(payload, response.getheader("Content-Type", ""))
            said = f"answered {status} rejecting {rejected} record(s)" + (f": {self._credentials.scrub(why)}" if why else "") if rejected else ""
            return Outcome(True, status=status, rejected=rejected, error=said)
        text = self._credentials.scrub(payload[:ERROR_BODY_BYTES].decode("utf-8", "replace").strip())
        if status in REFUSED_KEY_STATUS:
            error = self._credentials.refusal(status) + (f": {text}" if text else "")
            return Outcome(False, retry=False, status=status, error=error, refused_key=True)
        error = f"answered {status}" + (f": {text}" if text else "")
        if status in RETRYABLE_STATUS:
            return Outcome(False, retry=True, retry_after=_retry_after(response.getheader("Retry-After")), status=status, error=error)
        return Outcome(False, retry=False, status=status, error=error)

    def get(self, timeout: float) -> "tuple[int, bytes]":
        """A GET of the URL: (status, body). Raises OSError when nothing answers."""
        try:
            conn = self._connection(timeout)
            conn.request("GET", self._path, headers=self._credentials.headers())
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            try:
                conn.close()
            except OSError:
                pass

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._pid != os.getpid():
            # The parent's socket: leave it to the parent, never close it here.
            self._conn, self._pid = None, os.getpid()
        if self._conn is None:
            if self._https:
                context = self._tls or ssl.create_default_context()
                self._conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=context)
            else:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        else:
            self._conn.timeout = timeout
            if self._conn.sock is not None:
                self._conn.sock.settimeout(timeout)
        return self._conn


def _rejected(payload: bytes, content_type: str) -> "tuple[int, str]":
    """Records a 200 refused (OTLP partial success) and the collector's
    reason, when the body says so."""
    if not payload:
        return 0, ""
    if "json" in content_type:
        import json

        try:
            partial = json.loads(payload).get("partialSuccess", {})
            return int(partial.get("rejectedLogRecords", 0) or 0), str(partial.get("errorMessage", "") or "")[:ERROR_BODY_BYTES]
        except (ValueError, AttributeError, TypeError):
            return 0, ""
    try:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
    except ImportError:  # the JSON path (init's start record) runs without the SDK
        return 0, ""
    response = ExportLogsServiceResponse()
    try:
        response.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - an unreadable answer to a 200 is still a 200
        return 0, ""
    return int(response.partial_success.rejected_log_records), response.partial_success.error_message[:ERROR_BODY_BYTES]


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import time

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def tls_context(environ: Mapping[str, str], signal: str = "logs") -> Optional[ssl.SSLContext]:
    """A context that trusts the CA certificates of
    ``OTEL_EXPORTER_OTLP_<SIGNAL>_CERTIFICATE``, else of
    ``OTEL_EXPORTER_OTLP_CERTIFICATE``, and only them; ``None`` when neither
    is set (the system's trust store). A file that cannot be read is said at
    ``init()``, naming the variable, not at the first request."""
    for variable in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"):
        path = (environ.get(variable) or "").strip()
        if path:
            try:
                return ssl.create_default_context(cafile=path)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"{variable}={path!r} is not a readable PEM file of CA certificates: {_describe(exc)}") from None
    return None
