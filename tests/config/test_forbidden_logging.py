"""A refused request (403) is one warning line naming why, not a traceback: on a
console page, an API endpoint and a page refused inside its view alike."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "django.request"]


def test_a_console_page_refused_is_one_line_without_a_traceback(
    as_member: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        response = as_member.get("/audit/")
    assert response.status_code == 403
    [record] = request_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.exc_info is None
    line = record.getMessage()
    assert "\n" not in line
    assert line.startswith("Forbidden")
    assert "/audit/" in line
    assert "compliance or admin" in line  # why, from the refusal itself
    assert "Traceback" not in caplog.text


def test_an_api_refusal_is_one_line_without_a_traceback(
    with_key: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        response = with_key("agent").get("/api/v1/audit/")
    assert response.status_code == 403
    [record] = request_records(caplog)
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    "url", ["/audit/dashboard/", "/audit/export", "/audit/verify/"]
)
def test_every_audit_page_refused_is_one_line(
    as_member: Any, caplog: pytest.LogCaptureFixture, url: str
) -> None:
    with caplog.at_level(logging.WARNING):
        response = as_member.get(url)
    assert response.status_code == 403
    [record] = request_records(caplog)
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


def test_a_server_error_still_logs_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from config.logfilters import OneLineForbidden

    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        record = logging.LogRecord(
            "django.request", logging.ERROR, __file__, 1, "Internal Server Error: %s",
            ("/x",), (RuntimeError, exc, exc.__traceback__),
        )  # fmt: skip
    record.status_code = 500
    assert OneLineForbidden().filter(record)
    assert record.exc_info is not None
