"""Who is told that an approval waits: the people who may decide it.

The rule is ``identity.access.approval_decision_problem``, asked of each person
it could pass (active people with an email address who are superusers or in a
group holding ``calls.decide_approval``), so the list can never differ from who
may press Approve: never an API key's service user, never someone outside the
approval's catalog, never the person who asked nor the maker of a key (or a
key's key) that asked.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Exists, OuterRef, Q

from identity.access import APPROVE_APP, APPROVE_CODENAME, approval_decision_problem
from identity.models import UserCatalogAccess

# Approvers asked per approval at most (each costs a few small queries).
MAX_APPROVERS = 200


def approvers_to_tell(approval: Any) -> list[Any]:
    """The people who may decide ``approval`` and have an email address, by
    username; ``approval.catalog`` is read."""
    slug = approval.catalog.slug
    decide = Permission.objects.filter(
        content_type__app_label=APPROVE_APP, codename=APPROVE_CODENAME
    )
    limited = UserCatalogAccess.objects.filter(user=OuterRef("pk"))
    allowed = limited.filter(catalogs__contains=[slug])
    people = (
        get_user_model()
        .objects.filter(is_active=True, api_client__isnull=True)
        .exclude(email="")
        .filter(Q(is_superuser=True) | Q(groups__permissions__in=decide))
        .filter(~Exists(limited) | Exists(allowed))
        .distinct()
        .order_by("username")[:MAX_APPROVERS]
    )
    return [
        person for person in people if not approval_decision_problem(person, approval)
    ]
