"""Django admin for identity: keys are read only (the console and the API make,
rotate and revoke them); people, groups and catalog limits are changed through
forms that are audited and never make anyone bigger than the admin using them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest

from config.admin import ReadOnlyAdmin, staff_user
from identity.access_changes import access_changes
from identity.access_people import Manager, grant_of, permission_names
from identity.models import ApiClient, UserCatalogAccess


@admin.register(ApiClient)
class ApiClientAdmin(ReadOnlyAdmin):
    """Read only: keys are made, rotated and revoked in the console's API keys page
    or the API, where each change is an audit event."""

    list_display = [
        "name",
        "scope",
        "allow_unsafe",
        "key_prefix",
        "revoked",
        "expires",
        "created",
        "last_used",
    ]
    list_filter = ["scope", "revoked", "allow_unsafe"]
    search_fields = ["name", "key_prefix"]
    exclude = ["key_hash"]


class AccessAuditedAdmin(admin.ModelAdmin):
    """Each admin form, delete page or list action runs in one ``access_changes``
    block with the signed-in admin as actor: one ``access_changed`` event per person
    or group it changed, in its transaction (identity.access_changes).

    Nobody manages a person or group with more than they have
    (identity.access_people): ``refusal`` says why a row may not be touched (no
    change, delete or password page: a 403 naming the rule, the row stays
    readable) and ``after_refusal`` why a submitted form would make someone
    bigger (the form comes back with the rule on its field, status 403)."""

    def refusal(self, request: HttpRequest, obj: Any) -> str:
        return ""

    def after_refusal(self, request: HttpRequest, form: forms.ModelForm) -> str:
        return ""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or not self.refusal(request, obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or not self.refusal(request, obj))

    def _refuse(self, request: HttpRequest, object_id: str | None) -> None:
        obj = self.get_object(request, object_id) if object_id else None
        problem = self.refusal(request, obj) if obj is not None else ""
        if problem:
            raise PermissionDenied(problem)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kw: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kw)
        return checked_form(form, lambda bound: self.after_refusal(request, bound))

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kw: Any
    ) -> Any:
        response = super().render_change_form(request, context, *args, **kw)
        form = getattr(context.get("adminform"), "form", None)
        if getattr(form, "refused", ""):
            response.status_code = 403
        return response

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        *args: Any,
        **kw: Any,
    ) -> Any:
        if request.method == "POST":
            self._refuse(request, object_id)
        with access_changes(actor=staff_user(request), via="admin"):
            return super().changeform_view(request, object_id, *args, **kw)

    def delete_view(
        self, request: HttpRequest, object_id: str, *args: Any, **kw: Any
    ) -> Any:
        self._refuse(request, object_id)
        with access_changes(actor=staff_user(request), via="admin"):
            return super().delete_view(request, object_id, *args, **kw)

    def changelist_view(self, request: HttpRequest, *args: Any, **kw: Any) -> Any:
        with access_changes(actor=staff_user(request), via="admin"):
            return super().changelist_view(request, *args, **kw)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            problem = self.refusal(request, obj)
            if problem:
                raise PermissionDenied(problem)
        super().delete_queryset(request, queryset)


def checked_form(form_class: Any, check: Any) -> Any:
    """``form_class`` whose clean adds ``check(form)``'s "field: why" (when the
    values are otherwise good) to the field it names, and remembers it."""

    class Checked(form_class):  # type: ignore[misc, valid-type]
        refused = ""

        def clean(self) -> Any:
            data = super().clean()
            if not self._errors:
                problem = check(self)
                if problem:
                    self.refused = problem
                    name = problem.partition(":")[0]
                    self.add_error(name if name in self.fields else None, problem)
            return data

    Checked.__name__ = Checked.__qualname__ = form_class.__name__
    return Checked


def manager_of(request: HttpRequest) -> Manager:
    """The signed-in admin's holdings, read once per request."""
    cached = getattr(request, "_quiver_manager", None)
    if cached is None:
        cached = Manager(staff_user(request))
        request._quiver_manager = cached  # type: ignore[attr-defined]
    return cached


@admin.register(UserCatalogAccess)
class UserCatalogAccessAdmin(AccessAuditedAdmin):
    """Limit a person to some catalogs: no row, every catalog; an empty list, none.
    Each change is an audit event; removing a limit gives every catalog."""

    list_display = ["user", "catalogs"]
    search_fields = ["user__username"]

    def refusal(self, request: HttpRequest, obj: UserCatalogAccess) -> str:
        manager = manager_of(request)
        held = grant_of(obj.user)
        return manager.refusal(held) or manager.refusal(held.with_catalogs(None))

    def after_refusal(self, request: HttpRequest, form: forms.ModelForm) -> str:
        user = form.cleaned_data.get("user") or form.instance.user
        asked = form.cleaned_data.get("catalogs")
        grant = grant_of(user).with_catalogs(asked if isinstance(asked, list) else [])
        return manager_of(request).refusal(grant)


class AuditedUserAdmin(AccessAuditedAdmin, UserAdmin):
    """Django's user admin, with every change of groups, flags or deletion audited,
    and nobody changing (or setting the password of) a person bigger than them."""

    def refusal(self, request: HttpRequest, obj: Any) -> str:
        return manager_of(request).refusal(grant_of(obj))

    def after_refusal(self, request: HttpRequest, form: forms.ModelForm) -> str:
        data = form.cleaned_data
        grant = grant_of(form.instance)
        grant = replace(
            grant,
            is_superuser=bool(data.get("is_superuser", grant.is_superuser)),
            is_staff=bool(data.get("is_staff", grant.is_staff)),
        )
        if "groups" in data:
            grant = grant.with_groups(group.name for group in data["groups"])
        if "user_permissions" in data:
            grant = replace(grant, own=permission_names(data["user_permissions"]))
        return manager_of(request).refusal(grant)

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> Any:
        self._refuse(request, id)
        return super().user_change_password(request, id, form_url)


class AuditedGroupAdmin(AccessAuditedAdmin, GroupAdmin):
    """Django's group admin: a group's permissions, name (a role) and deletion
    change what its members may do, so each change is audited, and only someone
    who holds its permissions and manages each member changes it."""

    def refusal(self, request: HttpRequest, obj: Group) -> str:
        perms = permission_names(obj.permissions.all())
        members = obj.user_set.values_list("pk", flat=True)
        return manager_of(request).group_refusal(perms, members)

    def after_refusal(self, request: HttpRequest, form: forms.ModelForm) -> str:
        perms = permission_names(form.cleaned_data.get("permissions") or [])
        group = form.instance
        members = group.user_set.values_list("pk", flat=True) if group.pk else []
        return manager_of(request).group_refusal(perms, members)


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), AuditedUserAdmin)
admin.site.unregister(Group)
admin.site.register(Group, AuditedGroupAdmin)
