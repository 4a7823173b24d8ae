"""Log filters wired in ``settings.LOGGING``: kept free of Django and DRF imports,
since logging is configured before the apps are loaded."""

from __future__ import annotations

import logging
import traceback


class OneLineForbidden(logging.Filter):
    """A 403 is one warning line naming why, not a traceback: Django logs a
    ``PermissionDenied`` with its stack, which for a refusal (an expected answer)
    buries real errors and repeats on every probe of a forbidden page."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403 and record.exc_info:
            reason = record.exc_info[1]
            if reason is not None and str(reason):
                record.msg = f"{record.msg} (%s)"
                record.args = (*(record.args or ()), str(reason))  # type: ignore[misc]
            record.exc_info = None
            record.exc_text = None
        return True


# SQLSTATE classes whose messages quote the values sent: data exceptions (22),
# integrity violations (23), syntax and access rules (42).
_QUOTING_CLASSES = ("22", "23", "42")
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def is_database_error(exc: BaseException) -> bool:
    """psycopg's errors and Django's wrappers of them (``django.db.utils``)."""
    module = type(exc).__module__
    return module.startswith("psycopg") or module == "django.db.utils"


def safe_error_text(exc: BaseException) -> str:
    """What a log may say of ``exc``. A database error's message carries the
    statement (``LINE 1: ...``), the values (``DETAIL``, ``CONTEXT: JSON data``)
    and, for data and integrity errors, the value in its first line: of those
    only the class and SQLSTATE are kept, of the others the first line. Any
    other exception's message is its own."""
    if not is_database_error(exc):
        return str(exc)
    source = exc.__cause__ if exc.__cause__ is not None else exc
    state = str(getattr(getattr(source, "diag", None), "sqlstate", "") or "")
    name = type(exc).__name__
    if state[:2] in _QUOTING_CLASSES:
        return f"{name} (SQLSTATE {state})"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{name}: {first}" + (f" (SQLSTATE {state})" if state else "")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return found


class NoValuesFromTheDatabase(logging.Filter):
    """Logs never quote what callers sent: a database error, as a
    log argument or in a logged traceback, is shown by ``safe_error_text``
    instead of its message, which quotes the statement and its values."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(
            isinstance(arg, BaseException) for arg in record.args
        ):
            record.args = tuple(
                safe_error_text(a) if isinstance(a, BaseException) else a
                for a in record.args
            )
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and any(map(is_database_error, _chain(exc))):
            record.exc_text = safe_traceback(exc)
        return True


def safe_traceback(exc: BaseException) -> str:
    """The traceback Python would print, each exception's line by
    ``safe_error_text``."""
    text = ""
    for current in reversed(_chain(exc)):
        if text:
            text += _CAUSE if current.__cause__ is not None else _CONTEXT
        frames = "".join(traceback.format_tb(current.__traceback__))
        kind = type(current)
        name = kind.__qualname__
        if kind.__module__ != "builtins":
            name = f"{kind.__module__}.{name}"
        header = f"{name}: {safe_error_text(current)}"
        text += f"Traceback (most recent call last):\n{frames}{header}\n"
    return text.rstrip("\n")
