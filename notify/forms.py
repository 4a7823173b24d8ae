"""Console forms of webhooks; the rules are the services' (their errors land on
the field they name)."""

from __future__ import annotations

from django import forms

from config.forms import ServiceErrorsMixin
from notify.choices import WebhookEvent, WebhookFormat
from notify.services import MAX_GRACE_HOURS


class WebhookForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(max_length=64, help_text="A label, e.g. ops-slack")
    url = forms.CharField(
        max_length=2000,
        label="URL",
        strip=False,
        help_text="Where Quiver POSTs (http or https; never a cloud metadata address)",
    )
    events = forms.MultipleChoiceField(
        choices=WebhookEvent.choices,
        initial=list(WebhookEvent.values),
        widget=forms.CheckboxSelectMultiple,
    )
    format = forms.ChoiceField(
        choices=WebhookFormat.choices,
        initial=WebhookFormat.QUIVER,
        help_text="Slack-compatible: post to a Slack (or Mattermost) incoming webhook",
    )
    active = forms.BooleanField(required=False, initial=True)


class RotateForm(forms.Form):
    grace_hours = forms.IntegerField(
        min_value=0,
        max_value=MAX_GRACE_HOURS,
        label="Old secret keeps signing for (hours)",
        help_text="0 stops it now; during the grace both secrets sign each delivery",
    )
