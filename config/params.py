"""Query parameters parsed into bounded types, for every API endpoint and console
page: a value out of range is refused naming its parameter and the rule (a 400 on
the API, a form error on a page), never carried into arithmetic or SQL where it
would overflow (``date(9999, 12, 31) + 1 day``, a page number past bigint).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

# Days a filter may name: no audit event is older than the first, and the last
# leaves room for "+1 day" and any time zone without leaving Python's or
# Postgres' range.
EARLIEST_DAY = date(2000, 1, 1)
LATEST_DAY = date(9000, 12, 31)
DAY_RULE = f"must be a day from {EARLIEST_DAY} to {LATEST_DAY} (YYYY-MM-DD)"
# A page number; at 25-50 rows a page this is tens of millions of rows.
MAX_PAGE = 1_000_000
PAGE_RULE = f"must be a whole number from 1 to {MAX_PAGE}"
# Ids of rows (bigint columns) fit in a signed 64-bit integer.
MAX_ID = 2**63 - 1
ID_RULE = f"must be a whole number from 1 to {MAX_ID}"


class DayField(forms.DateField):
    """A day within ``EARLIEST_DAY`` .. ``LATEST_DAY`` (ISO ``YYYY-MM-DD``)."""

    default_error_messages = {"invalid": DAY_RULE}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators += [
            MinValueValidator(EARLIEST_DAY, message=DAY_RULE),
            MaxValueValidator(LATEST_DAY, message=DAY_RULE),
        ]


class PageForm(forms.Form):
    """A console list's ``?page=`` (empty means the first)."""

    page = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_PAGE,
        error_messages={
            "invalid": PAGE_RULE,
            "min_value": PAGE_RULE,
            "max_value": PAGE_RULE,
        },
    )

    def number(self) -> int:
        """The page asked for, or 1 when none or a bad one was given."""
        if not self.is_valid():
            return 1
        return self.cleaned_data["page"] or 1


def whole_number(text: str | None, maximum: int) -> int | None:
    """``text`` as an int in 1..``maximum``, or None when it is not one (ASCII
    digits only: ``"²".isdigit()`` is true, yet ``int("²")`` raises)."""
    if text is None or not (text.isascii() and text.isdigit()):
        return None
    if len(text) > len(str(maximum)):
        return None
    number = int(text)
    return number if 1 <= number <= maximum else None


def api_page(text: str | None) -> int:
    """The API's ``?page=``: 1 when absent, else a bounded whole number, or a 400
    naming ``page``."""
    if text in (None, ""):
        return 1
    number = whole_number(text, MAX_PAGE)
    if number is None:
        raise ValidationError({"page": [PAGE_RULE]})
    return number


def in_day_range(moment: datetime) -> bool:
    """Whether ``moment`` falls on a day a filter may name."""
    return EARLIEST_DAY <= moment.date() <= LATEST_DAY


class BoundedPagination(PageNumberPagination):
    """The API's pages (``DEFAULT_PAGINATION_CLASS``): ``?page=`` is a bounded
    whole number or a 400 naming it (DRF alone answers 404 "Invalid page" for
    ``?page=x``); a page past the end stays DRF's 404."""

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        return api_page(request.query_params.get(self.page_query_param))
