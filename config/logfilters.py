"""Log filters wired in ``settings.LOGGING``: kept free of Django and DRF imports,
since logging is configured before the apps are loaded."""

from __future__ import annotations

import logging


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
