"""DRF parsers that refuse hostile bodies before any view or serializer sees them.

JSON nested deeper than ``MAX_BODY_DEPTH`` is refused before it is parsed; a key
repeated in one object, and any string or key holding a NUL or a lone surrogate
(which Postgres cannot store), are refused after, naming its path: a 400
``invalid`` answer, and nothing written.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import BaseParser, FormParser, JSONParser, MultiPartParser

from config.jsonparse import (
    BAD_TEXT_RULE,
    DUPLICATE_KEY_RULE,
    MAX_BODY_DEPTH,
    DuplicateKey,
    JSONTooDeep,
    find_bad_text,
    loads_unique,
)


def refuse_bad_text(data: Any) -> None:
    """Raise a 400 naming the first string or key holding NUL or a lone surrogate."""
    if isinstance(data, Mapping) and hasattr(data, "lists"):
        data = {k: v[0] if len(v) == 1 else v for k, v in data.lists()}
    path = find_bad_text(data)
    if path is not None:
        raise ValidationError({path: [BAD_TEXT_RULE]})


class TextChecked(BaseParser):
    """A parser whose answer holds no string or key with a NUL or a lone
    surrogate: it parses as the parser after it in the MRO, then checks."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        parsed = self.parsed(stream, media_type, parser_context)
        refuse_bad_text(self.text_of(parsed))
        return parsed

    def parsed(
        self, stream: IO[Any], media_type: str | None, context: Mapping[str, Any] | None
    ) -> Any:
        return super().parse(stream, media_type, context)

    def text_of(self, parsed: Any) -> Any:
        """The part of ``parsed`` that holds the caller's text."""
        return parsed


class SafeJSONParser(TextChecked, JSONParser):
    """JSON with a nesting limit and no NUL or lone surrogate anywhere."""

    max_depth = MAX_BODY_DEPTH

    def parsed(
        self, stream: IO[Any], media_type: str | None, context: Mapping[str, Any] | None
    ) -> Any:
        encoding = (context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"body: not valid {encoding} text ({exc})") from exc
        try:
            return loads_unique(text, max_depth=self.max_depth)
        except DuplicateKey as exc:
            raise ValidationError({exc.path: [DUPLICATE_KEY_RULE]}) from exc
        except JSONTooDeep as exc:
            raise ValidationError({"body": [str(exc)]}) from exc
        except ValueError as exc:
            raise ParseError(f"body: not valid JSON ({exc})") from exc


class SafeFormParser(TextChecked, FormParser):
    """Form data with no NUL or lone surrogate in any field."""


class SafeMultiPartParser(TextChecked, MultiPartParser):
    """Multipart data with no NUL or lone surrogate in any text field."""

    def text_of(self, parsed: Any) -> Any:
        return parsed.data
