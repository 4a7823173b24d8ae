"""``{{ name|wordbreaks }}``: a long tool name may break after ``_`` ``.`` ``-``
(``/`` and ``:`` too), never in the middle of one of its words."""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_BREAK_AFTER = re.compile(r"([_.\-/:]+)")


@register.filter(is_safe=True)
def wordbreaks(value: object) -> SafeString:
    """The escaped text with a ``<wbr>`` after every run of separators."""
    escaped = str(conditional_escape(value if isinstance(value, str) else str(value)))
    # Escaping adds no separator but "&#x27;"/"&amp;": only ';' and '#', safe here.
    return mark_safe(_BREAK_AFTER.sub(r"\1<wbr>", escaped))  # noqa: S308
