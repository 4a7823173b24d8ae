"""``any_of`` (config.lookups) matches exactly the rows ``__in`` matches, whether
its values go as one array literal (plain words: a key's slugs) or value by value
(anything else: quotes, commas, braces, spaces, backslashes, NULL, non-ASCII)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.models import Catalog
from config.lookups import any_of, plain_array

pytestmark = pytest.mark.django_db

ODD = [
    "null",
    "NULL",
    "a,b",
    "with space",
    'quo"te',
    "it's",
    "back\\slash",
    "{brace}",
    "ünïcode",
    "",
    "tab\there",
]
PLAIN = ["team-01", "team_02", "Team03", "7"]


@pytest.fixture
def catalogs(db: None) -> list[str]:
    slugs = [*PLAIN, *ODD, "a", "b"]
    Catalog.objects.bulk_create(Catalog(slug=s, name=s or "empty") for s in slugs)
    return slugs


def matched(values: list) -> tuple[set[str], set[str], str]:
    """The slugs ``any_of`` and ``__in`` match, and the SQL ``any_of`` sent."""
    with CaptureQueriesContext(connection) as taken:
        got = set(
            Catalog.objects.filter(any_of("slug", values)).values_list(
                "slug", flat=True
            )
        )
    wanted = set(Catalog.objects.filter(slug__in=values).values_list("slug", flat=True))
    return got, wanted, taken.captured_queries[0]["sql"]


def test_plain_words_go_as_one_literal_and_match_what_in_matches(catalogs):
    got, wanted, sql = matched(PLAIN)

    assert got == wanted == set(PLAIN)
    assert "::text[]" in sql


@pytest.mark.parametrize("odd", ODD)
def test_a_value_that_is_not_a_plain_word_goes_value_by_value(catalogs, odd):
    got, wanted, sql = matched([*PLAIN, odd])

    assert got == wanted == {*PLAIN, odd}
    assert "::text[]" not in sql
    assert plain_array([*PLAIN, odd]) is None


def test_null_never_becomes_a_null_element_whatever_its_case():
    for word in ("null", "Null", "NULL", "nUlL"):
        assert plain_array(["a", word]) is None and plain_array([word]) is None
    assert plain_array(["nullable", "anull"]) == "{nullable,anull}"


def test_no_values_and_numbers_match_what_in_matches(catalogs):
    assert matched([])[0] == matched([])[1] == set()
    ids = list(Catalog.objects.filter(slug__in=PLAIN).values_list("pk", flat=True))
    found = Catalog.objects.filter(any_of("pk", ids)).values_list("slug", flat=True)
    assert set(found) == set(PLAIN)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.text(st.characters(blacklist_characters="\x00"), max_size=6)
        | st.sampled_from([*PLAIN, *ODD, "a", "b"]),
        max_size=8,
    )
)
def test_any_values_match_what_in_matches(catalogs, values):
    got, wanted, _ = matched(values)

    assert got == wanted
