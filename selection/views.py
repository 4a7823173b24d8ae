"""Console pages for selection: "Try it" and a catalog's selection settings.

Try it runs the same path as POST /api/v1/select (SelectInputSerializer, then
build_request, then select_tools with explain on), so what a curator sees here is
what an agent would get.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from catalog.access import access_for, get_catalog_for_user
from catalog.models import Catalog
from catalog.services.catalogs import DEFAULT_CATALOG
from config.http import request_id
from config.pages import acting_user, can_write, render_page, visible_catalogs
from config.ratelimit import rate_limited
from selection.api.serializers import SelectInputSerializer, SelectOutputSerializer
from selection.engine import RequestError
from selection.forms import SelectionSettingsForm, TryItForm
from selection.requests import build_request
from selection.services.select import select_tools
from selection.services.settings import (
    current_settings,
    refuse_unless_whole_catalog,
    update_selection_settings,
)
from selection.snippets import api_calls

TRY_TEMPLATE = "selection/try_it.html"
TRY_PARTIAL = "selection/partials/try_results.html"
SETTINGS_TEMPLATE = "selection/selection_settings.html"
STAGES = ("policy", "rank")
NEAR_MISSES = 5


@login_required
@rate_limited
def try_it(request: HttpRequest) -> HttpResponse:
    """Run one selection with explain on; htmx gets only the results fragment."""
    catalogs = list(visible_catalogs(request))
    wanted = request.POST.get("catalog") or request.GET.get("catalog")
    catalog = _pick_catalog(catalogs, wanted or DEFAULT_CATALOG)
    engine_settings = current_settings(catalog)[0] if catalog else {}
    options = {
        "catalogs": catalogs,
        "default_scorer": engine_settings.get("default_scorer", ""),
    }
    if request.method != "POST":
        initial = {"catalog": catalog.slug if catalog else ""}
        form = TryItForm(initial=initial, **options)
        return render_page(request, TRY_TEMPLATE, {"form": form, "catalog": catalog})
    form = TryItForm(request.POST, **options)
    answer = _select(request, form, catalog) if form.is_valid() else None
    context: dict[str, Any] = {"form": form, "catalog": catalog}
    if answer is not None:
        context.update(present(answer, engine_settings.get("core_tools", ())))
        context["api_calls"] = api_calls(
            request.build_absolute_uri("/"), form.payload()
        )
    return render_page(request, TRY_TEMPLATE, context, partial=TRY_PARTIAL)


def _pick_catalog(catalogs: list[Catalog], slug: str) -> Catalog | None:
    """The catalog named ``slug``, else the first one the user can see."""
    by_slug = {c.slug: c for c in catalogs}
    return by_slug.get(slug) or (catalogs[0] if catalogs else None)


def _select(
    request: HttpRequest, form: TryItForm, catalog: Catalog | None
) -> dict[str, Any] | None:
    """The API answer, or None with the refusal put on the form's inputs."""
    serializer = SelectInputSerializer(data=form.payload())
    if not serializer.is_valid():
        form.add_input_errors(serializer.errors)
        return None
    if catalog is None:  # the form only offers visible catalogs; none exist
        form.add_input_errors({"catalog": ["no catalog is visible to you"]})
        return None
    try:
        answer = select_tools(
            catalog,
            build_request(access_for(request.user), dict(serializer.validated_data)),
            fmt="canonical",
            actor=acting_user(request),
            request_id=request_id(request),
        )
        return dict(SelectOutputSerializer(answer).data)
    except PermissionDenied as exc:
        field = str(exc).split(":", 1)[0] if ":" in str(exc) else "roles"
        form.add_input_errors({field: [str(exc)]})
    except RequestError as exc:
        form.add_input_errors(exc.errors)
    return None


def present(answer: dict[str, Any], core_tools: Any) -> dict[str, Any]:
    """The answer arranged for the page: picks with bar widths, exclusions by stage.

    The API answer has no per-pick "core" flag, so core is read from the settings
    the answer was computed with (a picked core tool is always a core pick)."""
    core = set(core_tools)
    picks = [
        {
            **tool,
            "core": tool["name"] in core,
            "percent": f"{max(0.0, min(1.0, tool['score'])) * 100:.1f}",
            "signal_rows": sorted(tool["signals"].items()),
        }
        for tool in answer["tools"]
    ]
    excluded = answer.get("excluded", [])
    ranked_out = [
        e for e in excluded if e["stage"] == "rank" and e["score"] is not None
    ]
    return {
        "answer": answer,
        "picks": picks,
        "exclusion_groups": [
            (stage, [e for e in excluded if e["stage"] == stage]) for stage in STAGES
        ],
        "near_misses": sorted(ranked_out, key=lambda e: -e["score"])[:NEAR_MISSES],
    }


@login_required
@rate_limited
def selection_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """Show a catalog's effective settings; curators and admins save changes."""
    catalog = get_catalog_for_user(request.user, slug)
    refuse_unless_whole_catalog(request.user)
    data, version = current_settings(catalog)
    form = SelectionSettingsForm(initial={"settings": data})
    if request.method == "POST":
        if not can_write(request):
            raise PermissionDenied("changing settings needs the curator or admin scope")
        form = SelectionSettingsForm(request.POST)
        if form.is_valid():
            try:
                _saved, version = update_selection_settings(
                    catalog,
                    form.changed_settings(),
                    actor=acting_user(request),
                    request_id=request_id(request),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved selection settings v{version}.")
                return redirect("selection:settings", slug=catalog.slug)
    context = {"catalog": catalog, "form": form, "version": version}
    return render_page(request, SETTINGS_TEMPLATE, context)
