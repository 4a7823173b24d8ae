"""Logs never quote what a caller sent (issue 30, item 13). A database error's
message carries the statement and the values (``CONTEXT: JSON data, line 1:
...{"city": "a\\u0000...``): every handler of the configured logging shows such an
error by its class and SQLSTATE, as a log argument or in a logged traceback.
The errors come from the real test Postgres."""

from __future__ import annotations

import io
import logging

import pytest
from django.db import DatabaseError, OperationalError, connection, transaction

from config.logfilters import NoValuesFromTheDatabase, safe_error_text

pytestmark = pytest.mark.django_db

MARK = "QVSECRET"


def database_error(sql: str, value: str) -> DatabaseError:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [value])
    except DatabaseError as exc:
        return exc
    raise AssertionError("the statement did not fail")


ERRORS = {
    "nul in json": ("SELECT %s::jsonb", '{"city": "' + MARK + '\\u0000"}'),
    "bad json": ("SELECT %s::jsonb", '{"city": "' + MARK),
    "bad integer": ("SELECT %s::integer", MARK),
    "bad date": ("SELECT %s::date", MARK),
}


def logged(record_it: object) -> str:
    """What the project's own console handler writes for one record."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(NoValuesFromTheDatabase())
    logger = logging.getLogger("tests.quoting")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        record_it(logger)  # type: ignore[operator]
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_a_database_error_is_logged_without_the_values_it_quotes(kind):
    exc = database_error(*ERRORS[kind])
    assert MARK in str(exc)  # Postgres does quote them

    def as_argument(logger):
        logger.warning("call refused, database said: %s", exc)

    def as_traceback(logger):
        try:
            raise RuntimeError("wrapped") from exc
        except RuntimeError:
            logger.exception("call failed")

    for text in (logged(as_argument), logged(as_traceback)):
        assert MARK not in text
        assert "SQLSTATE" in text
        assert type(exc).__name__ in text
    assert "Traceback" in logged(as_traceback)
    assert "RuntimeError: wrapped" in logged(as_traceback)


def test_an_outage_keeps_its_first_line():
    exc = OperationalError("connection refused\nDETAIL: " + MARK)
    assert safe_error_text(exc) == "OperationalError: connection refused"


def test_other_exceptions_keep_their_messages():
    assert safe_error_text(ValueError("names: too many")) == "names: too many"


def test_the_configured_handlers_carry_the_filter():
    handlers = logging.getLogger().handlers
    assert any(
        isinstance(f, NoValuesFromTheDatabase) for h in handlers for f in h.filters
    )
