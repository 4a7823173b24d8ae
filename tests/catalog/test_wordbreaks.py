"""Long tool names wrap at their word parts: a <wbr> after _ . - (never inside a
word), with the name escaped first."""

from __future__ import annotations

from django.template import Context, Template

from catalog.templatetags.wordbreaks import wordbreaks


def test_a_break_opportunity_follows_each_separator_and_none_is_inside_a_word():
    assert wordbreaks("billing.invoice_export-v2") == (
        "billing.<wbr>invoice_<wbr>export-<wbr>v2"
    )
    assert wordbreaks("averyveryverylongword") == "averyveryverylongword"


def test_a_run_of_separators_gets_one_break():
    assert wordbreaks("a__b") == "a__<wbr>b"


def test_the_name_is_escaped_before_breaks_are_added():
    assert wordbreaks("<script>_x") == "&lt;script&gt;_<wbr>x"
    assert wordbreaks("a&b") == "a&amp;b"


def test_the_filter_is_safe_in_a_template():
    out = Template("{% load wordbreaks %}{{ v|wordbreaks }}").render(
        Context({"v": "x_<b>"})
    )
    assert out == "x_<wbr>&lt;b&gt;"
