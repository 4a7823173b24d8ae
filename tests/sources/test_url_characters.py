"""A source's URL is refused when saved if it carries a character no URL may carry
unencoded: controls (CR/LF split a request line), spaces, invisible and
direction-changing characters, anything outside printable ASCII, the ASCII that
RFC 3986 never allows unencoded, and a '%' that starts no escape. Every save path
(API add and edit, console add and edit, the service itself) names the field."""

from __future__ import annotations

import string

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.models import AuditEvent
from sources.models import Source
from sources.netguard import character_problem
from sources.services import update_source

pytestmark = pytest.mark.django_db
SOURCES = "/api/v1/catalogs/default/sources"
GOOD = "http://127.0.0.1:9/mcp"

ODD = [
    "\r\n",  # CR LF: a second request line
    "\r",
    "\n",
    "\t",
    "\x0b",
    "\x1b",
    "\x7f",  # DEL
    "\x85",  # NEL (C1)
    "\x9b",
    "\u00a0",  # no-break space
    "\u00ad",  # soft hyphen (invisible)
    "\u200b",  # zero-width space
    "\u200d",
    "\u2028",  # line separator
    "\u202e",  # right-to-left override
    "\u2066",
    "\ufeff",  # byte order mark
    "\u3164",  # Hangul filler (a letter that shows as nothing)
    "\U000e0041",  # tag A
    " ",
    "\\",  # a "/" to browsers, part of the user name to urlsplit
    '"',
    "<",
    ">",
    "^",
    "`",
    "{",
    "|",
    "}",
    "é",
]


BEFORE = "http://127.0.0.1:9/m"


def with_odd(char: str) -> str:
    return f"{BEFORE}{char}cp"


def test_every_odd_character_names_its_position_and_code_point():
    for char in ODD:
        problem = character_problem(with_odd(char))
        expected = f"url: character {len(BEFORE) + 1} (U+{ord(char[0]):04X}, "
        assert problem.startswith(expected), (char, problem)


@pytest.mark.parametrize("char", ODD, ids=lambda c: f"U+{ord(c[0]):04X}")
def test_the_api_refuses_it_on_add_naming_the_url(admin_api, char):
    answer = admin_api.post(
        SOURCES, {"name": "odd", "url": with_odd(char)}, format="json"
    )
    assert answer.status_code == 400, answer.json()
    assert answer.json()["fields"]["url"][0].startswith("url: character")
    assert not Source.objects.exists()


@pytest.mark.parametrize("char", ["\r\n", "\u202e", "\x00", "\\"])
def test_the_api_refuses_it_on_edit_and_keeps_the_stored_url(
    admin_api, make_source, char
):
    source = make_source(GOOD)
    answer = admin_api.patch(
        f"/api/v1/sources/{source.pk}", {"url": with_odd(char)}, format="json"
    )
    assert answer.status_code == 400, answer.json()
    assert "url" in answer.json()["fields"]
    source.refresh_from_db()
    assert source.url == GOOD
    assert AuditEvent.objects.filter(input__action="update").count() == 0


@pytest.mark.parametrize("char", ["\r\n", "\u200b", "%g0"])
def test_the_console_refuses_it_on_add_and_edit(client, admin_user, make_source, char):
    client.force_login(admin_user)
    added = client.post(
        "/catalogs/default/sources/",
        {"name": "odd", "url": with_odd(char), "timeout_seconds": "10"},
    )
    assert added.status_code == 200 and "url: character" in added.content.decode()
    source = make_source(GOOD)
    edited = client.post(
        f"/sources/{source.pk}/", {"url": with_odd(char), "timeout_seconds": "10"}
    )
    assert edited.status_code == 200 and "url: character" in edited.content.decode()
    source.refresh_from_db()
    assert source.url == GOOD and Source.objects.count() == 1


def test_the_service_refuses_it_whoever_calls(make_source, admin_user):
    source = make_source(GOOD)
    with pytest.raises(ValidationError) as refused:
        update_source(source, {"url": f"{GOOD}\r\nX-Injected: 1"}, actor=admin_user)
    assert "url" in refused.value.message_dict


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/m%", "http://127.0.0.1:9/%4"])
def test_a_percent_that_starts_no_escape_is_refused(url):
    assert "percent-escape" in character_problem(url)


def test_percent_escapes_and_every_rfc_3986_character_are_allowed():
    assert character_problem("https://xn--bcher-kva.example:8443/a%20b/c;d=e") == ""
    assert character_problem("http://h/" + "-._~!$&'()*+,;=:@/?#[]") == ""


ALLOWED = st.text(
    alphabet=string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?#[]",
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    before=ALLOWED,
    odd=st.characters(blacklist_categories=(), blacklist_characters=[]).filter(
        lambda c: not " " < c < "\x7f" or c in ' "<>\\^`{|}'
    ),
    after=ALLOWED,
)
def test_any_character_outside_printable_url_ascii_is_refused(before, odd, after):
    url = f"http://h/{before}{odd}{after}"
    problem = character_problem(url)
    assert problem.startswith(f"url: character {len('http://h/' + before) + 1} ")


@settings(max_examples=200, deadline=None)
@given(path=ALLOWED)
def test_a_url_of_allowed_characters_only_passes_the_character_rule(path):
    assert character_problem(f"http://h/{path}") == ""
