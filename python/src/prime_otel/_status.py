"""``init()``'s check of the run: a start event, then the collector's answer.

The collector creates a run on its first data and holds the platform's
answer: the run's id and dashboard URL, or the refusal (a refused key, no
team, a team that may not create runs). ``init()`` sends the run's
``prime.run.start`` event at once, then asks the collector's run status route
(the ``prime_status`` extension, ``GET /prime/v1/runs/status``) until the run
is known or the wait (``init_timeout``) is over, so a misconfigured run fails
at launch, as it does with ``prime_runs``.

Both requests use the standard library alone (OTLP/HTTP with a JSON body):
the check needs no SDK, and a refused run raises before one is loaded. It is
one attempt: when no collector answers yet, or an older one has no status
route, ``init()`` goes on unchecked with one warning, and the run's records
wait in the delivery queue until a collector takes them. Both carry the
trainer's credentials (``_auth``); a 401 or 403 from either is the
collector refusing them, which ``init()`` raises.
"""

import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from . import _transport
from ._auth import Credentials

STATUS_PATH = "/prime/v1/runs/status"
DEFAULT_STATUS_PORT = 4320
#: States after which waiting longer cannot change the answer.
SETTLED = ("running", "closing", "closed", "refused", "disabled")
START_EVENT = "prime.run.start"
#: One attempt at each request: the collector is on the same host or node.
REQUEST_TIMEOUT = 2.0


@dataclass
class RunInfo:
    """The collector's answer about a run. ``state`` is the route's, or
    ``unchecked`` when no answer could be had (``error`` says why)."""

    state: str
    id: Optional[str] = None
    url: Optional[str] = None
    directory: Optional[str] = None
    status: Optional[str] = None
    reason: Optional[str] = None
    error: Optional[str] = None
    status_code: Optional[int] = None

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any]) -> "RunInfo":
        code = answer.get("status_code")
        return cls(
            state=str(answer.get("state") or "unknown"),
            id=answer.get("id") or None,
            url=answer.get("url") or None,
            directory=answer.get("directory") or None,
            status=answer.get("status") or None,
            reason=answer.get("reason") or None,
            error=answer.get("error") or None,
            status_code=code if isinstance(code, int) else None,
        )


def status_base(otlp_endpoint: str, explicit: Optional[str]) -> str:
    """Where the status route is: ``explicit`` (``init(status_endpoint=)`` or
    ``PRIME_STATUS_ENDPOINT``), else the OTLP endpoint's host on port 4320."""
    if explicit:
        # host:port, as the collector's own PRIME_STATUS_ENDPOINT spells it, is taken too.
        return (explicit if "://" in explicit else "http://" + explicit).rstrip("/")
    parsed = urllib.parse.urlsplit(otlp_endpoint)
    host = parsed.hostname or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{parsed.scheme or 'http'}://{host}:{DEFAULT_STATUS_PORT}"


def check(
    resource: Mapping[str, Any],
    *,
    logs_url: str,
    status_url: str,
    credentials: Credentials,
    status_credentials: Credentials,
    tls: Optional[ssl.SSLContext] = None,
    kind: str,
    key: Optional[str],
    run_id: Optional[str],
    timeout: float,
    sleep: Any = time.sleep,
) -> RunInfo:
    """Send the start event, then ask about the run until it is settled or
    ``timeout`` seconds have passed. ``credentials`` go to the OTLP URL,
    ``status_credentials`` to the route (the key may go to one and not the
    other)."""
    deadline = time.monotonic() + max(0.0, timeout)
    start = _transport.Transport(logs_url, credentials, tls=tls)
    outcome = start.post(start_request(resource), "application/json", min(REQUEST_TIMEOUT, max(0.1, timeout)))
    start.close()
    if outcome.refused_key:
        return RunInfo("unchecked", error=f"the collector at {logs_url} {outcome.error}", status_code=outcome.status)
    if not outcome.ok:
        return RunInfo("unchecked", error=f"{logs_url} {outcome.error}" if outcome.status else f"no collector at {logs_url}: {outcome.error}",
                       status_code=outcome.status)

    query = {"kind": kind}
    query["id" if run_id else "key"] = run_id or key or ""
    route_credentials = status_credentials
    route = _transport.Transport(f"{status_url}{STATUS_PATH}?{urllib.parse.urlencode(query)}", route_credentials, tls=tls)
    wait = 0.05
    info = RunInfo("unknown")
    try:
        while True:
            try:
                code, body = route.get(min(REQUEST_TIMEOUT, max(0.1, deadline - time.monotonic())))
            except OSError as exc:
                reason = _transport._describe(exc)
                return RunInfo("unchecked", error=f"no run status route at {status_url} ({reason}): the collector has no "
                               "prime_status extension there; PRIME_STATUS_ENDPOINT says where it is")
            if code == 404:
                return RunInfo("unchecked", error=f"{status_url} has no run status route ({STATUS_PATH} answered 404)")
            if code in _transport.REFUSED_KEY_STATUS:
                said = route_credentials.scrub(" ".join(body[:200].decode("utf-8", "replace").split()))
                return RunInfo("unchecked", status_code=code, error=f"the run status route at {status_url} "
                               + route_credentials.refusal(code) + (f": {said}" if said and not said.startswith("<") else ""))
            if code != 200:
                said = route_credentials.scrub(" ".join(body[:200].decode("utf-8", "replace").split()))
                return RunInfo("unchecked", error=f"the run status route at {status_url} answered {code}" + (f": {said}" if said and not said.startswith("<") else ""))
            try:
                info = RunInfo.from_answer(json.loads(body))
            except (ValueError, AttributeError):
                return RunInfo("unchecked", error=f"the run status route at {status_url} answered something that is not JSON")
            if info.error:
                info.error = route_credentials.scrub(info.error)
            if info.state in SETTLED or time.monotonic() + wait > deadline:
                return info
            sleep(wait)
            wait = min(0.5, wait * 2)
    finally:
        route.close()


def start_request(resource: Mapping[str, Any]) -> bytes:
    """An OTLP/JSON logs request holding one ``prime.run.start`` record."""
    now = str(time.time_ns())
    body = {
        "resourceLogs": [{
            "resource": {"attributes": [{"key": k, "value": any_value(v)} for k, v in resource.items()]},
            "scopeLogs": [{
                "scope": {"name": "prime_otel"},
                "logRecords": [{"timeUnixNano": now, "observedTimeUnixNano": now, "eventName": START_EVENT}],
            }],
        }],
    }
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def any_value(value: Any) -> Dict[str, Any]:
    """An OTLP/JSON AnyValue (ints as strings, as the JSON mapping says)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}
