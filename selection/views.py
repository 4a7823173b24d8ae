"""Console pages for selection: "Try it" and a catalog's selection settings.

Try it runs the same path as POST /api/v1/select (SelectInputSerializer, then
build_request, then select_tools with explain on), so what a curator sees here is
what an agent would get.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from catalog.navigation import visible_catalogs
from catalog.services.catalogs import DEFAULT_CATALOG
from config.exceptions import LimitReached
from config.htmx import is_htmx_partial
from config.http import request_id
from config.pages import acting_user, paginate, render_page
from config.ratelimit import rate_limited, rate_limited_by
from identity.access import LABEL_MANAGERS, access_for, may_manage_labels
from selection.api.serializers import SelectInputSerializer, SelectOutputSerializer
from selection.engine import RequestError
from selection.forms import SelectionSettingsForm, SettingsFieldsForm, TryItForm
from selection.forms.fields import TOOL_CHOICES_MAX
from selection.forms.try_it import flatten_errors
from selection.models import SelectionSettingsChange
from selection.registry import (
    EvaluationInputError,
    RegressionRefused,
    evaluate_settings,
)
from selection.requests import build_request
from selection.services.select import select_tools
from selection.services.settings import (
    checked_settings,
    current_settings,
    known_tool_names,
    pickable_tool_names,
    refuse_unless_whole_catalog,
    restore_selection_settings,
    try_settings,
    update_selection_settings,
    version_changes,
)
from selection.snippets import api_calls

TRY_TEMPLATE = "selection/try_it.html"
TRY_PARTIAL = "selection/partials/try_results.html"
SETTINGS_TEMPLATE = "selection/selection_settings.html"
TRY_SETTINGS_PARTIAL = "selection/partials/settings_try.html"
HISTORY_TEMPLATE = "selection/settings_history.html"
# Each stage's group on Try it: its label and, for the rank stage, what each reason
# code means, so the group's total reads as the sum of the counters above it.
STAGES = {"policy": "By policy", "rank": "By the ranking"}
RANK_REASONS = {
    "cut": "ranked out",
    "below_min_score": "below min score",
    "no_tool_fits": "no tool fits",
    "lexical_overlap": "too few query words",
}
NEAR_MISSES = 5


@require_http_methods(["GET", "HEAD", "POST"])
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
            _group(stage, label, [e for e in excluded if e["stage"] == stage])
            for stage, label in STAGES.items()
        ],
        "near_misses": sorted(ranked_out, key=lambda e: -e["score"])[:NEAR_MISSES],
    }


def _group(stage: str, label: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A stage's listed exclusions and, for the ranking, how many of them each
    reason left out ("50 ranked out, 22 below min score"): the counters above
    count each reason apart, the group lists them together."""
    reasons: dict[str, int] = {}
    for row in rows:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    parts = [
        f"{count} {RANK_REASONS.get(reason, reason)}"
        for reason, count in reasons.items()
    ]
    breakdown = ", ".join(parts) if stage == "rank" and len(parts) > 1 else ""
    return {"stage": stage, "label": label, "rows": rows, "breakdown": breakdown}


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@rate_limited
def selection_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """A catalog's settings as a form (and as raw JSON); curators and admins save
    either, each save one new version."""
    catalog = get_catalog_for_user(request.user, slug)
    refuse_unless_whole_catalog(request.user)
    data, version = current_settings(catalog)
    fields_form = settings_fields_form(catalog, data)
    raw_form = SelectionSettingsForm(initial={"settings": data})
    if request.method == "POST":
        if not access_for(request.user).can_write:
            raise PermissionDenied("changing settings needs the curator or admin scope")
        form = posted_settings_form(request, catalog, data)
        if _save(request, catalog, form):
            return redirect("selection:settings", slug=catalog.slug)
        if isinstance(form, SelectionSettingsForm):
            raw_form = form
        else:
            fields_form = form
    context = {
        "catalog": catalog,
        "form": fields_form,
        "raw_form": raw_form,
        "raw_open": raw_form.is_bound,
        "version": version,
        "try_query": request.POST.get("try_query", ""),
    }
    return render_page(request, SETTINGS_TEMPLATE, context)


SettingsForm = SelectionSettingsForm | SettingsFieldsForm


def settings_fields_form(
    catalog: Catalog, data: dict[str, Any], posted: Any = None
) -> SettingsFieldsForm:
    """The grouped form, its tool names picked from the catalog's."""
    return SettingsFieldsForm(
        posted,
        settings=data,
        tool_names=pickable_tool_names(catalog, TOOL_CHOICES_MAX),
        known_tools=partial(known_tool_names, catalog),
    )


def posted_settings_form(
    request: HttpRequest, catalog: Catalog, data: dict[str, Any]
) -> SettingsForm:
    """The raw JSON form when its textarea was posted, else the grouped one."""
    if "settings" in request.POST:
        return SelectionSettingsForm(request.POST)
    return settings_fields_form(catalog, data, request.POST)


def accepted_regression(request: HttpRequest) -> str | None:
    """The curator's reason to accept a drop of the labelled NDCG@10, if given
    (bounded like the API's)."""
    reason = request.POST.get("accept_regression", "").strip()[:1000]
    return reason or None


def _save(request: HttpRequest, catalog: Catalog, form: SettingsForm) -> bool:
    """Save a valid form as a new version; False with the service's refusal on
    the form otherwise."""
    if not form.is_valid():
        return False
    try:
        _saved, version = update_selection_settings(
            catalog,
            form.changed_settings(),
            actor=acting_user(request),
            request_id=request_id(request),
            reason=form.cleaned_data.get("reason") or "",
            accept_regression=accepted_regression(request),
        )
    except ValidationError as exc:
        form.add_service_error(exc)
        return False
    except RegressionRefused as exc:
        form.add_error(None, f'{exc}. To save anyway, say why in "Accept a drop".')
        return False
    messages.success(request, f"Saved selection settings v{version}.")
    return True


@login_required
@require_POST
@rate_limited_by(2)
def try_settings_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The Try-it query under the saved and the proposed settings, side by side
    (an htmx fragment). Nothing is saved; like Try it, each answer is audited."""
    catalog = get_catalog_for_user(request.user, slug)
    refuse_unless_whole_catalog(request.user)
    data, version = current_settings(catalog)
    form = posted_settings_form(request, catalog, data)
    context: dict[str, Any] = {"catalog": catalog, "version": version, "form": form}
    query = request.POST.get("try_query", "").strip()
    problems = [] if form.is_valid() else _form_problems(form)
    if not query:
        problems.append("try_query: type a request to try the settings on")
    if not problems:
        problems = _compare(request, catalog, form, query, context)
    context["problems"] = problems
    return render_page(request, TRY_SETTINGS_PARTIAL, context)


EVALUATE_SETTINGS_PARTIAL = "selection/partials/settings_evaluate.html"


@login_required
@require_POST
@rate_limited_by(2)
def evaluate_settings_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The catalog's labelled requests (its evaluation set) under the saved and
    the proposed settings: two evaluation runs (learning), compared side by side
    on the Evaluation page. Nothing is saved to the settings."""
    catalog = get_catalog_for_user(request.user, slug)
    if not may_manage_labels(access_for(request.user), catalog.slug):
        raise PermissionDenied(LABEL_MANAGERS)
    data, version = current_settings(catalog)
    form = posted_settings_form(request, catalog, data)
    context: dict[str, Any] = {"catalog": catalog, "version": version}
    problems = [] if form.is_valid() else _form_problems(form)
    busy = False
    if not problems:
        try:
            proposed = checked_settings(form.settings_data()).to_dict()
            actor = acting_user(request)
            context |= evaluate_settings(catalog, actor=actor, proposed=proposed)
        except EvaluationInputError as exc:
            problems = [str(exc)]
        except ValidationError as exc:
            problems = list(exc.messages)
        except LimitReached as exc:
            # htmx swaps only 2xx answers: the fragment says why, a page is a 429.
            problems, busy = [str(exc)], not is_htmx_partial(request)
    context["problems"] = problems
    return render_page(
        request, EVALUATE_SETTINGS_PARTIAL, context, status=429 if busy else 200
    )


def _form_problems(form: SettingsForm) -> list[str]:
    return [str(e) for errors in form.errors.values() for e in errors]


def _compare(
    request: HttpRequest,
    catalog: Catalog,
    form: SettingsForm,
    query: str,
    context: dict[str, Any],
) -> list[str]:
    """Run both answers into ``context``; the refusals, if any."""
    body = {"catalog": catalog.slug, "query": query, "explain": True}
    serializer = SelectInputSerializer(data={**body, "format": "canonical"})
    if not serializer.is_valid():
        return [m for k, v in serializer.errors.items() for m in flatten_errors(k, v)]
    try:
        proposed = checked_settings(form.settings_data())
        current, trial = try_settings(
            catalog,
            build_request(access_for(request.user), dict(serializer.validated_data)),
            proposed,
            actor=acting_user(request),
            request_id=request_id(request),
        )
    except ValidationError as exc:
        return list(exc.messages)
    except RequestError as exc:
        return [f"{k}: {v}" for k, v in exc.errors.items()]
    context["columns"] = side_by_side(
        dict(SelectOutputSerializer(current).data),
        dict(SelectOutputSerializer(trial).data),
    )
    return []


Answer = dict[str, Any]


def side_by_side(current: Answer, trial: Answer) -> list[dict[str, Any]]:
    """Both answers' picks; the saved one's marks what the proposed one drops,
    the proposed one's how each pick moved (up, down, new)."""
    ranks = [_ranks(current), _ranks(trial)]
    columns = []
    for side, answer in enumerate((current, trial)):
        picks = [
            {**tool, "move": _move(side, rank, ranks[1 - side].get(tool["name"]))}
            for rank, tool in enumerate(answer["tools"], 1)
        ]
        columns.append({"answer": answer, "picks": picks, "proposed": side == 1})
    return columns


def _ranks(answer: Answer) -> dict[str, int]:
    return {tool["name"]: rank for rank, tool in enumerate(answer["tools"], 1)}


def _move(side: int, rank: int, other: int | None) -> str:
    if side == 0:
        return "dropped" if other is None else ""
    if other is None:
        return "new"
    if other == rank:
        return "same"
    return f"up {other - rank}" if other > rank else f"down {rank - other}"


@require_safe
@login_required
def settings_history(request: HttpRequest, slug: str) -> HttpResponse:
    """Every version of a catalog's settings: who, when, why, the diff against
    the one before; curators and admins restore one as a new version."""
    catalog = get_catalog_for_user(request.user, slug)
    refuse_unless_whole_catalog(request.user)
    page = paginate(request, SelectionSettingsChange.objects.history_of(catalog))
    _data, version = current_settings(catalog)
    rows = [{"change": c, "changes": version_changes(c)} for c in page.object_list]
    context = {"catalog": catalog, "page": page, "rows": rows, "version": version}
    return render_page(request, HISTORY_TEMPLATE, context)


@login_required
@require_POST
@rate_limited
def restore_settings(request: HttpRequest, slug: str, version: int) -> HttpResponse:
    """One click: a new version equal to version ``version``."""
    catalog = get_catalog_for_user(request.user, slug)
    if not access_for(request.user).can_write:
        raise PermissionDenied("restoring settings needs the curator or admin scope")
    try:
        _data, new = restore_selection_settings(
            catalog,
            version,
            actor=acting_user(request),
            request_id=request_id(request),
            accept_regression=accepted_regression(request),
        )
    except ValidationError as exc:
        messages.error(request, f"Version {version} was not restored: {exc.messages}")
    except RegressionRefused as exc:
        messages.error(request, f"Version {version} was not restored: {exc}")
    else:
        messages.success(request, f"Restored version {version} as v{new}.")
    return redirect("selection:settings-history", slug=catalog.slug)
