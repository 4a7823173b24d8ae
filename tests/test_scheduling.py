"""The suite's sharing between test processes keeps pytest-django's order."""

from __future__ import annotations

from tests.scheduling import whole_modules

ORDER = [
    "tests/a.py::test_db_one",
    "tests/a.py::test_db_two",
    "tests/b.py::test_db",
    "tests/c.py::test_transactional",
    "tests/b.py::test_transactional",
]


def test_a_module_whose_tests_run_together_is_handed_out_whole():
    assert "tests/a.py" in whole_modules(ORDER)
    assert "tests/c.py" in whole_modules(ORDER)


def test_a_module_split_by_the_database_order_is_not():
    assert "tests/b.py" not in whole_modules(ORDER)
