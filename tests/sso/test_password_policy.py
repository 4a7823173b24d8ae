"""Password sign-in turned off (setting or console switch): every path that checks
a password refuses it, one answer whatever the name, each refusal audited; the
break-glass admin still signs in, audited as such; sign-outs are audited."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from sso.forms import PASSWORD_OFF
from sso.models import SignInPolicy
from sso.policy import POLICY_PK
from tests.factories import make_user
from tests.oidc import Provider, settings_for

pytestmark = pytest.mark.django_db
PASSWORD = "pw-12345678"
SSO = settings_for(Provider(issuer="https://id.example.com", accounts=None))  # type: ignore[arg-type]


@pytest.fixture
def people(admin_user):
    return {"root": admin_user, "pat": make_user("pat", groups=("curator",))}


@pytest.fixture(params=["setting", "console"])
def passwords_off(request, settings):
    settings.QUIVER_OIDC = SSO
    settings.QUIVER_BREAK_GLASS_ADMIN = "root"
    if request.param == "setting":
        settings.QUIVER_PASSWORD_LOGIN = False
    else:
        SignInPolicy.objects.create(pk=POLICY_PK, password_login=False)


def sign_in(client, username, password, path="/login/"):
    return client.post(path, {"username": username, "password": password})


def refusals():
    return AuditEvent.objects.filter(event_type="sign_in_refused")


def test_a_password_signs_in_and_out_and_both_are_audited(client, people):
    assert sign_in(client, "pat", PASSWORD).status_code == 302
    event = AuditEvent.objects.get(event_type="sign_in")
    assert event.actor_name == "pat"
    assert event.input == {"method": "password", "break_glass": False}
    client.post("/logout/")
    out = AuditEvent.objects.get(event_type="sign_out")
    assert out.actor_name == "pat" and out.input == {"method": "password"}


def test_with_passwords_off_the_console_refuses_everyone_but_break_glass(
    client, people, passwords_off
):
    answers = [
        sign_in(client, "pat", PASSWORD),
        sign_in(client, "pat", "wrong"),
        sign_in(client, "nobody", PASSWORD),
        sign_in(client, "root", "wrong"),
    ]
    for answer in answers:
        assert answer.status_code == 200
        assert PASSWORD_OFF in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert refusals().count() == 4
    assert [r.output["user_id"] for r in refusals().order_by("pk")] == [
        people["pat"].pk,
        people["pat"].pk,
        None,
        people["root"].pk,
    ]
    assert sign_in(client, "root", PASSWORD).status_code == 302
    glass = AuditEvent.objects.get(event_type="sign_in")
    assert glass.input["break_glass"] is True


def test_with_passwords_off_the_admin_sign_in_refuses_too(
    client, people, passwords_off
):
    people["pat"].is_staff = True
    people["pat"].save()
    answer = sign_in(client, "pat", PASSWORD, path="/admin/login/")
    assert PASSWORD_OFF in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert refusals().count() == 1
    assert sign_in(client, "root", PASSWORD, path="/admin/login/").status_code == 302


def test_with_passwords_off_the_sign_in_page_offers_single_sign_on_first(
    client, passwords_off
):
    html = client.get("/login/").content.decode()
    assert "Sign in with Acme ID" in html
    assert "Break-glass sign-in" in html


def test_without_single_sign_on_the_page_is_as_before(client):
    html = client.get("/login/").content.decode()
    assert "Sign in with" not in html
    assert 'name="password"' in html
