"""Errors from the Kubernetes API, by meaning rather than by raw HTTP status."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """The API server answered with a failure Status."""

    def __init__(self, status: int, reason: str = "", message: str = "", body: Any = None) -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class BadRequest(ApiError):
    """400: the request itself is malformed (e.g. an invalid JSON patch)."""


class Unauthorized(ApiError):
    """401: credentials missing or expired (a rotated token is re-read on the next request)."""


class Forbidden(ApiError):
    """403: RBAC or an admission policy said no."""


class NotFound(ApiError):
    """404: the object (or its namespace) does not exist. During a patch: it was deleted meanwhile."""


class Conflict(ApiError):
    """409 Conflict: resourceVersion precondition failed; re-read and retry."""


class AlreadyExists(Conflict):
    """409 AlreadyExists: a create raced with another writer."""


class Gone(ApiError):
    """410: the watch resourceVersion is too old; relist."""


class Invalid(ApiError):
    """422: the object failed schema or validation; retrying the same body will not help."""


class TooManyRequests(ApiError):
    """429: API priority and fairness is throttling us; back off."""


class ServerError(ApiError):
    """5xx: the server failed; retry with backoff."""


class ApiUnavailable(Exception):
    """The API server could not be reached at all (connection refused, reset, timeout)."""


def error_for(status: int, body: Any) -> ApiError:
    reason = ""
    message = ""
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
    elif isinstance(body, str):
        message = body[:500]
    cls: type[ApiError]
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    else:
        cls = {
            400: BadRequest,
            401: Unauthorized,
            403: Forbidden,
            404: NotFound,
            410: Gone,
            422: Invalid,
            429: TooManyRequests,
        }.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, reason, message, body)
