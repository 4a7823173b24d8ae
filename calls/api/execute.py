"""POST /api/v1/tool-calls/execute: run one tool call through Quiver.

200 when the upstream was tried (its result scrubbed of the source's secrets), 202
while a person must approve the call, a 4xx for a refusal naming the field and the
rule, a 503 naming the part for a limit of the service or an outage. A 429 or 503
says whether the call may be sent again (config.retries): never when the upstream
may have run. Every answer: docs/reference/tool-calls.md.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions
from rest_framework.request import Request
from rest_framework.response import Response

from calls.answers import NEEDS_AUTHORIZATION, CallAnswer, with_absolute_link
from calls.input import CallInputSerializer, call_input
from calls.services import CallNotRecorded, execute_call
from config.http import request_id
from config.ratelimit import ClientRateThrottle
from config.retries import RETRY_AFTER_S, mark_retry, retry_body

REFUSAL_CODES = {
    400: "invalid",
    403: "permission_denied",
    404: "not_found",
    429: "throttled",
    503: "unavailable",
}
# The limits a call met before it was claimed: nothing ran, it may be sent again.
RETRYABLE_LIMITS = frozenset(
    {"calls_per_key", "calls_per_source", "calls_per_process", "redis"}
)


class ExecuteCallView(generics.GenericAPIView):
    """Run a tool call: access, validation, approval, the upstream, the audit row."""

    serializer_class = CallInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [ClientRateThrottle]

    @extend_schema(request=CallInputSerializer, responses={200: dict, 202: dict})
    def post(self, request: Request) -> Response:
        data = call_input(request.data)
        approval = data.get("approval_id")
        try:
            answer = execute_call(
                request.user,
                name=data["name"],
                arguments=data["arguments"],
                catalog=data.get("catalog"),
                selection_id=data.get("selection_id"),
                approval_id=str(approval) if approval else None,
                request_id=request_id(request),
                channel="api",
            )
        except CallNotRecorded as exc:  # it ran: never to be sent again
            down = {"error": "unavailable", "detail": str(exc), "service": "audit"}
            return Response(retry_body(down, None), status=503)
        if answer.status < 400:
            return Response(answer.as_dict(), status=answer.status)
        base = request.build_absolute_uri("/")
        return refusal(with_absolute_link(answer, base))


def refusal(answer: CallAnswer) -> Response:
    """A refused call in the error envelope; a limit's 429 or 503 says whether
    the call may be sent again."""
    code = REFUSAL_CODES.get(answer.status, "conflict")
    if answer.outcome == NEEDS_AUTHORIZATION:
        code = NEEDS_AUTHORIZATION
    fields = {answer.refused_field: [answer.reason]} if answer.refused_field else {}
    body = {"error": code, "detail": answer.reason, "fields": fields}
    body |= answer.as_dict()
    if answer.status == 503:
        body["service"] = answer.limit
    if answer.status not in (429, 503):
        return Response(body, status=answer.status)
    wait = RETRY_AFTER_S if answer.limit in RETRYABLE_LIMITS else None
    response = Response(retry_body(body, wait), status=answer.status)
    mark_retry(response, wait)
    return response
