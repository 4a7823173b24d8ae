"""Django admin plumbing every app's admin shares: who is acting, and a view-only
admin for rows that services and workers write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def staff_user(request: HttpRequest) -> User:
    """The admin only serves signed-in staff; the services record them as actor."""
    assert isinstance(request.user, AbstractBaseUser)
    return request.user


class ReadOnlyAdmin(admin.ModelAdmin):
    """View only: rows are written by services and workers, never by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
