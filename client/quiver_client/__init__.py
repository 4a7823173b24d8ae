"""quiver-client: the Python client of a Quiver tool-selection server."""

from quiver_client.adapters import SEARCH_TOOL_NAME, SearchArgumentsError
from quiver_client.client import AsyncQuiver, Quiver, RetryPolicy
from quiver_client.errors import (
    APIError,
    AuthenticationError,
    BadRequest,
    Conflict,
    NotFound,
    PayloadTooLarge,
    PendingApproval,
    PermissionDenied,
    QuiverConnectionError,
    QuiverError,
    QuiverTimeout,
    RateLimited,
    ServerError,
    Unavailable,
)
from quiver_client.types import (
    BatchError,
    CheckedCall,
    Exclusion,
    Pick,
    Selection,
    ToolCallResult,
    ToolCallsValidation,
)

__all__ = [
    "APIError",
    "AsyncQuiver",
    "AuthenticationError",
    "BadRequest",
    "BatchError",
    "CheckedCall",
    "Conflict",
    "Exclusion",
    "NotFound",
    "PayloadTooLarge",
    "PendingApproval",
    "PermissionDenied",
    "Pick",
    "Quiver",
    "QuiverConnectionError",
    "QuiverError",
    "QuiverTimeout",
    "RateLimited",
    "RetryPolicy",
    "SEARCH_TOOL_NAME",
    "SearchArgumentsError",
    "Selection",
    "ServerError",
    "ToolCallResult",
    "ToolCallsValidation",
    "Unavailable",
]
