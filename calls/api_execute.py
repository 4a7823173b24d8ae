"""POST /api/v1/tool-calls/execute: run one tool call through Quiver.

200 when the upstream was tried (``outcome`` ran, failed or timed_out; the
upstream's result as it was, scrubbed of the source's secrets), 202 while a
person must approve the call, 4xx for a refusal naming the field and the rule
(404 an unknown or hidden tool, 400 bad arguments, 403 not allowed or denied, 409
no source or an approval that does not cover the call, 429 the key's calls in
flight), 503 naming the part for a limit of the service (calls per source or web
process), Redis down (the limits cannot be counted), unreadable source headers,
or a call whose outcome could not be recorded."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions
from rest_framework.request import Request
from rest_framework.response import Response

from calls.input import CallInputSerializer, call_input
from calls.services import CallNotRecorded, execute_call
from config.http import request_id
from config.ratelimit import ClientRateThrottle

REFUSAL_CODES = {
    400: "invalid",
    403: "permission_denied",
    404: "not_found",
    429: "throttled",
    503: "unavailable",
}
RETRY_AFTER_S = 5


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
        except CallNotRecorded as exc:
            down = {"error": "unavailable", "detail": str(exc), "service": "audit"}
            return Response(down, status=503)
        body = answer.as_dict()
        if answer.status < 400:
            return Response(body, status=answer.status)
        code = REFUSAL_CODES.get(answer.status, "conflict")
        fields = {answer.refused_field: [answer.reason]} if answer.refused_field else {}
        body = {"error": code, "detail": answer.reason, "fields": fields, **body}
        if answer.status == 503:
            body["service"] = answer.limit
        response = Response(body, status=answer.status)
        if answer.status in (429, 503):
            response["Retry-After"] = str(RETRY_AFTER_S)
        return response
