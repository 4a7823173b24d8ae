"""Pages of the audit list (console and API) that count at most ``COUNT_CAP``
matches: counting every match of a filter over millions of rows costs more than
the page itself, so past the cap the list says "more than"."""

from __future__ import annotations

from functools import cached_property
from typing import Any, cast

from django.core.paginator import Paginator
from django.db.models import QuerySet
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

COUNT_CAP = 10_000


class CappedPaginator(Paginator):
    """Pages of a list whose count stops at ``COUNT_CAP`` (+1 to know it is more)."""

    @cached_property
    def count(self) -> int:
        events = cast(QuerySet[Any], self.object_list)
        return events[: COUNT_CAP + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP


class CappedPagination(PageNumberPagination):
    """The API's pages of audit events: ``count`` stops at ``COUNT_CAP`` + 1, and
    ``count_capped`` says when there are more."""

    django_paginator_class = CappedPaginator

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        assert self.page is not None
        paginator = cast(CappedPaginator, self.page.paginator)
        response.data["count_capped"] = paginator.capped
        return response

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        answer = super().get_paginated_response_schema(schema)
        answer["properties"]["count_capped"] = {
            "type": "boolean",
            "description": f"true when more than {COUNT_CAP} events match "
            f"(count is then {COUNT_CAP + 1})",
        }
        return answer
