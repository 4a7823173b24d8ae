"""The console's Sources pages: admins list, add, test, sync, edit and delete;
curators get 403 and people who cannot see the catalog 404; header values are
never in a page."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.models import Catalog
from identity.models import UserCatalogAccess
from jobs.models import Job
from sources.models import Source
from sources.secrets import MASK, decrypt_headers
from tests.factories import make_user
from tests.sources.conftest import SECRET, sync

pytestmark = pytest.mark.django_db


def test_an_admin_adds_a_source_from_the_console(client, admin_user, upstream):
    client.force_login(admin_user)
    answer = client.post(
        "/catalogs/default/sources/",
        {
            "name": "weather",
            "url": upstream.url,
            "headers": f"Authorization: {SECRET}",
            "timeout_seconds": "10",
        },
    )
    source = Source.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/sources/{source.pk}/"
    assert decrypt_headers(source) == {"Authorization": SECRET}
    page = client.get(f"/sources/{source.pk}/").content.decode()
    assert f"Authorization: {MASK}" in page and "sk-upstream" not in page


def test_a_bad_url_is_shown_on_its_field(client, admin_user):
    client.force_login(admin_user)
    answer = client.post(
        "/catalogs/default/sources/",
        {"name": "meta", "url": "http://169.254.169.254/", "timeout_seconds": "10"},
    )
    assert answer.status_code == 200
    assert "denied address" in answer.content.decode()
    assert not Source.objects.exists()


def test_saving_the_form_as_shown_keeps_the_secret(
    client, admin_user, make_source, upstream
):
    source = make_source(upstream.url, headers={"Authorization": SECRET})
    client.force_login(admin_user)
    client.post(
        f"/sources/{source.pk}/",
        {
            "url": upstream.url,
            "headers": f"Authorization: {MASK}",
            "timeout_seconds": "12",
        },
    )
    source.refresh_from_db()
    assert decrypt_headers(source) == {"Authorization": SECRET}
    assert source.timeout_seconds == 12


def test_test_and_sync_now_and_the_tools_it_brought(
    client, admin_user, make_source, upstream
):
    source = make_source(upstream.url)
    client.force_login(admin_user)

    tested = client.post(f"/sources/{source.pk}/test/", HTTP_HX_REQUEST="true")
    assert "Connected" in tested.content.decode()

    synced = client.post(f"/sources/{source.pk}/sync/")
    job = Job.objects.get(kind="sync")
    assert synced["Location"] == f"/jobs/{job.pk}/"
    Job.objects.filter(pk=job.pk).delete()
    sync(source)
    page = client.get(f"/sources/{source.pk}/").content.decode()
    assert "weather__get_forecast" in page and "7 created" in page
    assert "/tools/" in page  # links to the tools


def test_delete_from_the_console_is_an_audit_event(
    client, admin_user, make_source, upstream
):
    source = make_source(upstream.url)
    client.force_login(admin_user)
    answer = client.post(f"/sources/{source.pk}/delete/")
    assert answer["Location"] == "/catalogs/default/sources/"
    actions = AuditEvent.objects.filter(event_type="source_changed").values_list(
        "input__action", flat=True
    )
    assert list(actions.order_by("id")) == ["create", "delete"]


def test_a_curator_gets_403_and_an_outsider_404(client, curator, make_source, upstream):
    source = make_source(upstream.url)
    client.force_login(curator)
    assert client.get("/catalogs/default/sources/").status_code == 403
    assert client.get(f"/sources/{source.pk}/").status_code == 403
    assert client.post(f"/sources/{source.pk}/sync/").status_code == 403
    Catalog.objects.create(slug="other", name="Other")
    outsider = make_user("ada", groups=("admin",))
    UserCatalogAccess.objects.create(user=outsider, catalogs=["other"])
    client.force_login(outsider)
    assert client.get("/catalogs/default/sources/").status_code == 404
    assert client.get(f"/sources/{source.pk}/").status_code == 404
    assert client.post(f"/sources/{source.pk}/delete/").status_code == 404
    assert Source.objects.filter(pk=source.pk).exists()


def test_the_catalog_page_links_to_sources_for_admins_only(client, admin_user, curator):
    client.force_login(admin_user)
    assert "/catalogs/default/sources/" in client.get("/catalogs/").content.decode()
    client.force_login(curator)
    assert "/catalogs/default/sources/" not in client.get("/catalogs/").content.decode()
