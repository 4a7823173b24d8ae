"""Pages of the audit list (console and API) that count at most ``COUNT_CAP``
matches: counting every match of a filter over millions of rows costs more than
the page itself, so past the cap the list says "more than". Each list runs under
``TIME_LIMIT_MS``, so a filter the indexes serve badly answers "narrow it" in
seconds instead of running for minutes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cached_property
from typing import Any, cast

from django.core.paginator import Page, Paginator
from django.db import OperationalError, connection, transaction
from django.db.models import QuerySet
from psycopg.errors import QueryCanceled
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from config.params import MAX_PAGE, BoundedPagination

# 1,000, not 10,000: counting 10,001 matches of a common filter (or of two
# combined) reads 10,000 rows scattered over the table, several times the cost of
# the page itself (bench/README.md); large log UIs stop counting early too.
COUNT_CAP = 1_000
TIME_LIMIT_MS = 3_000


class ListTooSlow(APIException):
    """The list's queries ran past ``TIME_LIMIT_MS`` and were cancelled (the
    console says so on the page; the API answers 503 with this detail)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "too_slow"
    default_detail = (
        f"these filters took longer than {TIME_LIMIT_MS // 1000} s and were "
        "stopped: narrow them (a day, a catalog, a tool or a longer search text)"
    )


@contextmanager
def time_limit() -> Iterator[None]:
    """Run the enclosed queries with a statement timeout of ``TIME_LIMIT_MS``
    (in a transaction or savepoint of their own); ``ListTooSlow`` when one is
    cancelled."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout')")
            before = cursor.fetchone()[0]
            limit = f"{TIME_LIMIT_MS}ms"
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [limit])
            yield
            # Inside a savepoint the setting would outlive it: put it back.
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [before])
    except OperationalError as exc:
        if isinstance(exc.__cause__, QueryCanceled):
            raise ListTooSlow from exc
        raise


class CappedPaginator(Paginator):
    """Pages of a list whose count stops at ``cap`` (+1 to know it is more):
    ``COUNT_CAP``, or the end of the page asked for when that is further, so a
    later page is always reachable (each page's "next" counts a page further)."""

    asked = 1

    def validate_number(self, number: Any) -> int:
        with suppress(TypeError, ValueError):  # the paginator's own check refuses it
            # Bounded: the cap below becomes a LIMIT, which must fit in a bigint.
            self.asked = min(MAX_PAGE, max(1, int(number)))
        return super().validate_number(number)

    @cached_property
    def cap(self) -> int:
        return max(COUNT_CAP, self.asked * self.per_page)

    @cached_property
    def first_rows(self) -> list[Any]:
        """The first page and one more row: when that is all there is, the count
        needs no query of its own (a rare filter's index scan runs once)."""
        return list(self.object_list[: self.per_page + 1])

    @cached_property
    def count(self) -> int:
        if self.asked == 1 and len(self.first_rows) <= self.per_page:
            return len(self.first_rows)
        # Unordered: any cap + 1 matches will do, so the planner may stop a scan
        # early instead of sorting every match newest first.
        events = cast(QuerySet[Any], self.object_list).order_by()
        return events[: self.cap + 1].count()

    def page(self, number: Any) -> Page:
        page = super().page(number)
        if page.number == 1 and self.asked == 1:
            page.object_list = self.first_rows[: self.per_page]
        return page

    @property
    def capped(self) -> bool:
        return self.count > self.cap


class CappedPagination(BoundedPagination):
    """The API's pages of audit events: ``count`` stops at the paginator's cap + 1,
    and ``count_capped`` says when there are more."""

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
            "description": f"true when more events match than were counted: "
            f"{COUNT_CAP}, or up to the end of the page asked for when further "
            "(count is then one more than that)",
        }
        return answer
