"""The hot paths that bypass the ORM or DRF, in one place.

New code uses the ORM and DRF. Each bypass here (``rows``, ``copy_rows``, ``insert``,
``beside``, ``plain_input``) exists because a benchmark said so (its gain:
bench/README.md, "Fast paths"), and tests/fastpath/test_parity.py holds it to the
answers of the path it replaces. Every bypass, its users and its test:
docs/how-to/development.md, Where the fast paths live.
"""
