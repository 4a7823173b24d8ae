"""Console pages of webhooks (admins of the catalog; notify.querysets decides): a
catalog's webhooks with the add form, and one webhook's page (edit, rotate the
secret, delete, its delivery log with replay). A new secret is shown once, on the
page that made it, as a new API key is."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from config.console_views import deleting_view
from config.exceptions import Conflict
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from notify import services
from notify.choices import DeliveryStatus
from notify.forms import RotateForm, WebhookForm
from notify.models import Webhook
from notify.querysets import (
    deliveries_of,
    get_delivery,
    get_webhook_for_user,
    webhooks_of,
)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def webhook_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The catalog's webhooks; POST adds one and shows its secret once."""
    catalog, hooks = webhooks_of(request.user, slug)
    form, created, secret = WebhookForm(), None, ""
    if request.method == "POST":
        form = WebhookForm(request.POST)
        if form.is_valid():
            try:
                created, secret = services.create_webhook(
                    catalog,
                    **form.cleaned_data,
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                form = WebhookForm()
    context = {
        "catalog": catalog,
        "webhooks": hooks,
        "form": form,
        "created": created,
        "secret": secret,
        "no_public_url": not settings.QUIVER_PUBLIC_URL,
    }
    return render_page(request, "notify/webhook_list.html", context)


def _initial(webhook: Webhook) -> dict[str, Any]:
    return {
        "name": webhook.name,
        "url": webhook.url,
        "events": webhook.events,
        "format": webhook.format,
        "active": webhook.active,
    }


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def webhook_detail(request: HttpRequest, webhook_id: int) -> HttpResponse:
    """One webhook and its delivery log; POST edits it."""
    webhook = get_webhook_for_user(request.user, webhook_id)
    form = WebhookForm(initial=_initial(webhook))
    if request.method == "POST":
        form = WebhookForm(request.POST, initial=_initial(webhook))
        if form.is_valid():
            try:
                services.update_webhook(
                    webhook,
                    form.cleaned_data,
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved webhook {form.cleaned_data['name']}.")
                return redirect("notify:webhook-detail", webhook_id=webhook.pk)
    return _detail(request, webhook, form=form)


def _detail(
    request: HttpRequest,
    webhook: Webhook,
    *,
    form: WebhookForm | None = None,
    rotate: RotateForm | None = None,
    secret: str = "",
) -> HttpResponse:
    status = request.GET.get("status", "")
    status = status if status in DeliveryStatus.values else ""
    grace = settings.QUIVER_WEBHOOK_ROTATION_GRACE_HOURS
    context = {
        "webhook": webhook,
        "form": form or WebhookForm(initial=_initial(webhook)),
        "rotate": rotate or RotateForm(initial={"grace_hours": grace}),
        "secret": secret,
        "page": paginate(request, deliveries_of(webhook, status)),
        "status": status,
        "statuses": DeliveryStatus.choices,
        "max_attempts": settings.QUIVER_WEBHOOK_MAX_ATTEMPTS,
    }
    return render_page(
        request,
        "notify/webhook_detail.html",
        context,
        partial="notify/partials/deliveries.html",
    )


@require_POST
@login_required
@rate_limited
def webhook_rotate(request: HttpRequest, webhook_id: int) -> HttpResponse:
    """A new secret, shown on the page this once."""
    webhook = get_webhook_for_user(request.user, webhook_id)
    rotate = RotateForm(request.POST)
    if not rotate.is_valid():
        return _detail(request, webhook, rotate=rotate)
    webhook, secret = services.rotate_secret(
        webhook,
        grace_hours=rotate.cleaned_data["grace_hours"],
        actor=acting_user(request),
        request_id=request_id(request),
    )
    return _detail(request, webhook, secret=secret)


# Delete the webhook and its delivery log.
webhook_delete = deleting_view(
    find=get_webhook_for_user,
    delete=services.delete_webhook,
    done=lambda hook: f"Deleted webhook {hook.name} and its delivery log.",
    back="notify:webhook-list",
)


@require_POST
@login_required
@rate_limited
def delivery_replay(
    request: HttpRequest, webhook_id: int, delivery_id: int
) -> HttpResponse:
    """Send a failed delivery again (a new line of the log)."""
    webhook = get_webhook_for_user(request.user, webhook_id)
    try:
        replay = services.replay_delivery(
            get_delivery(webhook, delivery_id),
            actor=acting_user(request),
            request_id=request_id(request),
        )
    except Conflict as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Delivery {delivery_id} is sent again as delivery {replay.pk}."
        )
    return redirect("notify:webhook-detail", webhook_id=webhook.pk)
