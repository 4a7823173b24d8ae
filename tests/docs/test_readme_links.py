"""The README's links into the documentation site (and its screenshot) resolve:
MkDocs checks the site's own links, not the README's."""

from __future__ import annotations

import re

from tests.docs.env_reads import ROOT


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)", readme)
    local = [link for link in links if "://" not in link]
    assert len(local) > 10
    assert [link for link in local if not (ROOT / link).is_file()] == []
