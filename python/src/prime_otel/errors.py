"""The exceptions ``prime_runs`` raises at the caller, under the same names and
in the same two families.

Errors this package raises itself derive from :class:`PrimeRunsError`. Errors
that carry the platform's answer (a refused key, a team that may not create
runs) derive from :class:`APIError`, as ``prime_runs``'s do (it takes them from
``prime_traces``). The platform's answer reaches a trainer here through the
collector's run status route, at ``init()``. A collector that will not let
the trainer in (401, 403: its key refused, or none sent) raises the same
classes, at ``init()`` and, under ``on_error="raise"``, at ``finish()`` and
``flush()``; records it refuses for good (a 400, a partial success) raise an
``APIError`` (``code`` ``collector_rejected_records``) there too. To catch
everything::

    except (pr.PrimeRunsError, pr.APIError):
"""

from typing import Optional


class PrimeRunsError(Exception):
    """Base of the errors this package raises itself."""


class ConfigurationError(PrimeRunsError):
    """``init()`` was given something it cannot send, or the collector says the
    run cannot exist as configured (no team): names the argument or setting."""


class EnvironmentResolutionError(PrimeRunsError):
    """An environment could not be resolved (the collector resolves them)."""


class RunFinishedError(PrimeRunsError):
    """A log call on a run that is already finished."""


class DeliveryError(PrimeRunsError):
    """``finish()`` or ``flush()`` under ``on_error="raise"``: records that did
    not reach the collector within the budget. ``undelivered`` counts them,
    ``dropped`` and ``failed`` are the run's counters at that moment."""

    def __init__(self, message: str, *, undelivered: int = 0, dropped: int = 0, failed: int = 0) -> None:
        super().__init__(message)
        self.undelivered = undelivered
        self.dropped = dropped
        self.failed = failed


class APIError(Exception):
    """The platform refused a request; ``status_code`` and ``code`` say how."""

    def __init__(self, message: str, *, status_code: Optional[int] = None, code: Optional[str] = None) -> None:
        self.status_code = status_code
        self.code = code
        super().__init__(message)


class UnauthorizedError(APIError):
    """401: a key was refused: by the platform (the collector's key, or on a
    multi-tenant gateway the trainer's), or by the collector itself (the
    trainer's ``PRIME_API_KEY``, or none sent). The message says which, and
    never holds the key."""


class PaymentRequiredError(APIError):
    """402: payment required."""


class ForbiddenError(APIError):
    """403: the key is valid but may not do this (a team that is not allow-listed)."""


class NotFoundError(APIError):
    """404: the run or environment does not exist for this owner."""


class RetryableAPIError(APIError):
    """429 or 5xx: the same request may succeed after ``retry_after`` seconds."""

    def __init__(
        self,
        message: str,
        *,
        status_code: Optional[int] = None,
        code: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message, status_code=status_code, code=code)
        self.retry_after = retry_after


class TransportError(APIError):
    """The request failed below HTTP: connection refused, TLS, a broken stream."""


class APITimeoutError(TransportError):
    """The request timed out."""


#: ``APIError.code`` of a refusal by the collector itself, not the platform.
COLLECTOR_REFUSED = "collector_refused_key"


def refused_by_collector(status: Optional[int], message: str) -> APIError:
    """A collector's 401 (``UnauthorizedError``) or 403 (``ForbiddenError``)."""
    cls = ForbiddenError if status == 403 else UnauthorizedError
    return cls(message, status_code=status, code=COLLECTOR_REFUSED)


#: ``APIError.code`` of records the collector refused for good: a 400 (or
#: another final status), or the rejections of a partial success.
COLLECTOR_REJECTED = "collector_rejected_records"


def rejected_by_collector(status: Optional[int], message: str) -> APIError:
    """Records the collector refused for good, raised at the next ``flush()``
    or ``finish()`` under ``on_error="raise"``; ``status_code`` is the HTTP
    status, None for a partial success (a 200 that refused some records)."""
    return APIError(message, status_code=status, code=COLLECTOR_REJECTED)


def is_transient(exc: BaseException) -> bool:
    """Whether a failure is about this moment (retry later) rather than this run."""
    return isinstance(exc, (RetryableAPIError, TransportError))
