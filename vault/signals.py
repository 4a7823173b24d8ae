"""People's tokens go with their person and their source, whatever path removes
them: a person deactivated (the People page, the admin, single sign-on, a
script) or deleted, a source deleted. Each removal is audited in the transaction
that makes the change, and the tokens are revoked at their server once it
commits (``vault.services.removal``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_delete
from django.dispatch import receiver

from sources.models import Source
from vault.models import Connection
from vault.services.removal import remove_connections


@receiver(post_save, sender=get_user_model(), dispatch_uid="quiver_vault_person")
def _person_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.is_active:
        return
    found = Connection.objects.filter(person_id=instance.pk)
    if found.exists():
        remove_connections(found, reason="the person was deactivated", actor=None)


@receiver(pre_delete, sender=get_user_model(), dispatch_uid="quiver_vault_gone")
def _person_deleting(sender: Any, instance: Any, **kwargs: Any) -> None:
    found = Connection.objects.filter(person_id=instance.pk)
    if found.exists():
        remove_connections(found, reason="the person was deleted", actor=None)


@receiver(pre_delete, sender=Source, dispatch_uid="quiver_vault_source")
def _source_deleting(sender: Any, instance: Source, **kwargs: Any) -> None:
    found = Connection.objects.filter(source_id=instance.pk)
    if found.exists():
        remove_connections(found, reason="the source was deleted", actor=None)
