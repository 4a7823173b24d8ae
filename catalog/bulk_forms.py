"""The tool list's bulk bar: which tools, what to do, why, and the count agreed to.
catalog.services.bulk_edit checks the change; this form only reads the bar."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from catalog.services.tools import MAX_REASON_CHARS

MAX_BULK_IDS = 1000  # a page shows at most 200 tools to tick


# What the tool list's bulk bar offers: (choice, label, the API's ``set`` key).
BULK_ACTIONS = [
    ("status:active", "Set status: active"),
    ("status:disabled", "Set status: disabled"),
    ("status:deprecated", "Set status: deprecated"),
    ("add_tags", "Add tag"),
    ("remove_tags", "Remove tag"),
    ("category", "Set category"),
    ("add_allowed_roles", "Add role"),
    ("remove_allowed_roles", "Remove role"),
    ("roles_any", "Open to every role"),
    ("delete", "Delete"),
]


class BulkEditForm(forms.Form):
    """The tool list's bulk bar: which tools (the ticked ones, or every one the
    filters match), what to do, and why; ``confirm`` holds the count the curator
    was shown and agreed to."""

    scope = forms.ChoiceField(
        choices=[("selected", "Selected"), ("filtered", "All matching the filters")],
        initial="selected",
        widget=forms.RadioSelect,
    )
    filter_query = forms.CharField(required=False, widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=[("", "Choose an action…"), *BULK_ACTIONS])
    value = forms.CharField(required=False, max_length=100, label="Tag or category")
    role = forms.ChoiceField(required=False, label="Role")
    reason = forms.CharField(
        required=False, max_length=MAX_REASON_CHARS, label="Reason"
    )
    confirm = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, roles: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        role_field = self.fields["role"]
        assert isinstance(role_field, forms.ChoiceField)
        role_field.choices = [("", "role…"), *[(r, r) for r in roles]]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        action = data.get("action", "")
        # Any id is taken here: the set the curator manages decides what changes.
        getlist: Any = getattr(self.data, "getlist", lambda name: [])
        ids = [int(v) for v in getlist("ids") if str(v).isdigit() and len(v) < 12]
        data["ids"] = sorted(set(ids))[:MAX_BULK_IDS]
        if data.get("scope") == "selected" and not data["ids"]:
            self.add_error(None, "ids: tick the tools to change first")
        if action in ("add_tags", "remove_tags", "category") and not (
            data.get("value") or action == "category"
        ):
            self.add_error("value", f"value: {action} needs a tag")
        if action.endswith("_allowed_roles") and not data.get("role"):
            self.add_error("role", "role: pick one of the roles the catalog knows")
        return data

    def change_values(self) -> tuple[dict[str, Any] | None, bool]:
        """The API's ``set`` object (or None) and ``delete`` for this choice."""
        data = self.cleaned_data
        action = data["action"]
        if action == "delete":
            return None, True
        if action.startswith("status:"):
            return {"status": action.split(":", 1)[1]}, False
        if action == "roles_any":
            return {"allowed_roles": []}, False
        if action.endswith("_allowed_roles"):
            return {action: [data["role"]]}, False
        if action == "category":
            return {"category": data.get("value", "")}, False
        return {action: [data["value"]]}, False

    @property
    def action_label(self) -> str:
        return dict(BULK_ACTIONS).get(self.cleaned_data.get("action", ""), "")
