"""Console pages of webhooks (admins of the catalog; catalog.owned decides): a
catalog's webhooks with the add form, and one webhook's page (edit, rotate the
secret, delete, its delivery log with replay), on catalog.owned_pages' list and
detail. A new secret is shown once, on the
page that made it, as a new API key is."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from catalog.models import Catalog
from catalog.owned_pages import OwnedDetailPage, OwnedListPage, console_page
from config.console_views import deleting_view
from config.exceptions import Conflict
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited
from notify import services
from notify.choices import DeliveryStatus
from notify.forms import RotateForm, WebhookForm
from notify.models import Webhook
from notify.querysets import deliveries_of, get_delivery, get_webhook_for_user


class WebhookList(OwnedListPage):
    """The catalog's webhooks; POST adds one and shows its secret once."""

    model = Webhook
    form_class = WebhookForm
    template_name = "notify/webhook_list.html"
    create = services.create_webhook

    def page(
        self, catalog: Catalog, rows: QuerySet[Any], form: Any, **more: Any
    ) -> HttpResponse:
        more = {"created": None, "secret": "", **more}
        more["no_public_url"] = not settings.QUIVER_PUBLIC_URL
        return super().page(catalog, rows, form, **more)

    def created(
        self, catalog: Catalog, rows: QuerySet[Any], made: tuple[Webhook, str]
    ) -> HttpResponse:
        webhook, secret = made
        form = WebhookForm()
        return self.page(catalog, rows, form, created=webhook, secret=secret)


def _initial(webhook: Webhook) -> dict[str, Any]:
    return {
        "name": webhook.name,
        "url": webhook.url,
        "events": webhook.events,
        "format": webhook.format,
        "active": webhook.active,
    }


class WebhookDetail(OwnedDetailPage):
    """One webhook and its delivery log; POST edits it."""

    model = Webhook
    form_class = WebhookForm
    update = services.update_webhook
    pk_url_kwarg = "webhook_id"
    detail_url = "notify:webhook-detail"

    def initial(self, found: Webhook) -> dict[str, Any]:
        return _initial(found)

    def page(self, found: Webhook, form: WebhookForm) -> HttpResponse:
        return _detail(self.request, found, form=form)


webhook_list = console_page(WebhookList)
webhook_detail = console_page(WebhookDetail)


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
