"""Exceptions. Every error response of the server has the body
``{"error": {"code", "message", "field"?}}``; its closed set of codes
(``src/error.rs``, ``ErrorCode``) maps one to one onto the classes below, and
the HTTP status is the fallback when a body is not in that shape (a proxy in
between, say).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class MnemoError(Exception):
    """Base of every exception this client raises."""


class APIConnectionError(MnemoError):
    """The server could not be reached, or the connection broke."""


class APITimeoutError(APIConnectionError):
    """The request took longer than the client's timeout."""


class APIError(MnemoError):
    """The server answered with an error status.

    ``code`` and ``message`` come from the error body; ``field`` names the
    request field the error is about, when there is one; ``retry_after`` is
    the ``Retry-After`` header in seconds, when sent; ``request_id`` is the
    ``x-request-id`` the server logged the request under.
    """

    status: int = 0
    default_code: str = ""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.retry_after = retry_after
        self.request_id = request_id
        self.body = body


class InvalidArgumentError(APIError):
    default_code = "invalid_argument"


class AuthenticationError(APIError):
    default_code = "unauthenticated"


class PermissionDeniedError(APIError):
    default_code = "forbidden"


class NotFoundError(APIError):
    default_code = "not_found"


class ConflictError(APIError):
    default_code = "conflict"


class QuotaExceededError(ConflictError):
    """A per-user quota of the server's policy is reached (409; e.g.
    ``limits.max_threads_per_user``). Not retried: waiting does not help."""

    default_code = "quota_exceeded"


class PayloadTooLargeError(APIError):
    """A body, text, URL (414) or header block (431) over the server's limits."""

    default_code = "payload_too_large"


class InvalidConfigurationError(APIError):
    default_code = "invalid_configuration"


class RateLimitedError(APIError):
    """Over the key's request rate (429); ``retry_after`` says when to come
    back. Retried by the client's policy before it is raised."""

    default_code = "rate_limited"


class ServiceUnavailableError(APIError):
    """A component is not ready or not configured (e.g. no chat model for turns)."""

    default_code = "unavailable"


class OverloadedError(ServiceUnavailableError):
    """Too much concurrent work; ``retry_after`` says when to come back."""

    default_code = "overloaded"


class BadGatewayError(APIError):
    """The chat model endpoint behind a turn failed."""

    default_code = "bad_gateway"


class InternalServerError(APIError):
    default_code = "internal"


_BY_CODE: Dict[str, Type[APIError]] = {
    cls.default_code: cls
    for cls in (
        InvalidArgumentError,
        AuthenticationError,
        PermissionDeniedError,
        NotFoundError,
        ConflictError,
        QuotaExceededError,
        PayloadTooLargeError,
        InvalidConfigurationError,
        RateLimitedError,
        ServiceUnavailableError,
        OverloadedError,
        BadGatewayError,
        InternalServerError,
    )
}

_BY_STATUS: Dict[int, Type[APIError]] = {
    400: InvalidArgumentError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    414: PayloadTooLargeError,
    431: PayloadTooLargeError,
    422: InvalidConfigurationError,
    429: RateLimitedError,
    502: BadGatewayError,
    503: ServiceUnavailableError,
}

#: The error codes the server can send (``ErrorCode`` in ``src/error.rs``).
ERROR_CODES = frozenset(_BY_CODE)


def error_class(status: int, code: Optional[str]) -> Type[APIError]:
    """The exception class for an error response: by code, else by status."""
    if code is not None and code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return InternalServerError if status >= 500 else APIError


def from_response(
    status: int,
    body: Any,
    *,
    retry_after: Optional[float] = None,
    request_id: Optional[str] = None,
    text: str = "",
) -> APIError:
    """Builds the exception for an error response's status and parsed body."""
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict) and isinstance(detail.get("code"), str):
        code: str = detail["code"]
        message = str(detail.get("message", ""))
        field = detail.get("field")
    else:
        code = error_class(status, None).default_code or f"http_{status}"
        message = text[:500] or f"HTTP {status}"
        field = None
    cls = error_class(status, code)
    return cls(
        message,
        status=status,
        code=code,
        field=field,
        retry_after=retry_after,
        request_id=request_id,
        body=body,
    )
