"""What every console form shares: a service's refusal shown on the field it names."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError


class ServiceErrorsMixin(forms.BaseForm):
    """``add_service_error``: a service's ``ValidationError`` on the form.

    A refusal keyed by field lands on that field when the form has it, else on
    the form; a refusal with no field (a plain message or a list) lands on the
    form. The views catch the service's error and call this instead of each form
    reading ``message_dict``, which a refusal with no field does not have.
    """

    def add_service_error(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc.messages)
            return
        for field, messages in exc.message_dict.items():
            self.add_error(field if field in self.fields else None, messages)
