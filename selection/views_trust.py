"""A catalog's trust policy page: when definitions wait for review and what a
flagged tool result becomes. Read by curators, compliance and admins; saved by
curators and admins as a new version of the catalog's settings (audited as
every settings change)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from catalog.lookups import get_catalog_for_user
from config.http import request_id
from config.pages import acting_user, render_page
from config.ratelimit import rate_limited
from identity.access import access_for
from screening.rules import RULES
from selection.forms.trust import TrustPolicyForm
from selection.models import SelectionSettings
from selection.services.settings import (
    refuse_unless_whole_catalog,
    update_trust_policy,
)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def trust_policy(request: HttpRequest, slug: str) -> HttpResponse:
    catalog = get_catalog_for_user(request.user, slug)
    refuse_unless_whole_catalog(request.user)
    stored = SelectionSettings.objects.stored_for(catalog)
    policy = stored.screening()
    form = TrustPolicyForm(policy=policy)
    if request.method == "POST":
        if not access_for(request.user).can_write:
            raise PermissionDenied(
                "changing the trust policy needs the curator or admin scope"
            )
        form = TrustPolicyForm(request.POST, policy=policy)
        if form.is_valid():
            try:
                _, version = update_trust_policy(
                    catalog,
                    form.cleaned_data["trust"],
                    actor=acting_user(request),
                    request_id=request_id(request),
                    reason=form.cleaned_data["reason"],
                )
            except ValidationError as exc:
                form.add_error(None, exc.messages)
            else:
                messages.success(
                    request, f"Trust policy saved (settings version {version})."
                )
                return redirect("selection:trust", slug=catalog.slug)
    rules = sorted(RULES.values(), key=lambda rule: (rule.kind, rule.id))
    context = {
        "catalog": catalog,
        "form": form,
        "rules": rules,
        "version": stored.version,
    }
    return render_page(request, "selection/trust_policy.html", context)
