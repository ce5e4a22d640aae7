"""Python client for Mnemo, a memory service for AI agents.

>>> from mnemo import Client
>>> with Client("http://127.0.0.1:8420", api_key="mnemo_...") as mnemo:   # doctest: +SKIP
...     mnemo.add("Alice prefers green tea", user_id="alice", kind="preference", refresh=True)
...     hits = mnemo.search("what does alice drink?", user_id="alice", explain=True).hits
"""

from . import errors, models
from ._core import UNSET, Retry
from .client import AsyncClient, AsyncThreadSession, Client, ThreadSession
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadGatewayError,
    ConflictError,
    InternalServerError,
    InvalidArgumentError,
    InvalidConfigurationError,
    MnemoError,
    NotFoundError,
    OverloadedError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QuotaExceededError,
    RateLimitedError,
    ServiceUnavailableError,
)

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AsyncClient",
    "AsyncThreadSession",
    "AuthenticationError",
    "BadGatewayError",
    "Client",
    "ConflictError",
    "InternalServerError",
    "InvalidArgumentError",
    "InvalidConfigurationError",
    "MnemoError",
    "NotFoundError",
    "OverloadedError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitedError",
    "Retry",
    "ServiceUnavailableError",
    "ThreadSession",
    "UNSET",
    "errors",
    "models",
]
