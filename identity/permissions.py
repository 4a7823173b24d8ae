"""DRF permission classes; each asks identity.access, the one place for the rules."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from identity.access import access_for


class CuratorWrites(permissions.BasePermission):
    """Anyone signed in reads; curators and admins write."""

    message = "permission: writing the catalog needs the curator or admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        access = access_for(request.user)
        if not access.signed_in:
            return False
        return request.method in permissions.SAFE_METHODS or access.can_write


class ComplianceReads(permissions.BasePermission):
    message = "permission: the audit log needs the compliance or admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        return access_for(request.user).can_audit


class AdminOnly(permissions.BasePermission):
    message = "permission: managing API keys needs the admin scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        return access_for(request.user).is_admin
