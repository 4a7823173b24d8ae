"""Every operation Quiver serves, read from the URL configuration: each URL
pattern (the API's and the console's) with each method its view allows. A
DRF view allows the methods its actions or handlers take; a function view the
methods its ``require_http_methods`` decorator names, or ``config.errors.json_reads``
(which holds them the same way; a function view naming none allows every method:
tests/access/test_every_endpoint.py refuses that); a class-based Django view its
handlers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

WRITES = ("POST", "PUT", "PATCH", "DELETE")
EVERY = ("GET", "POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Operation:
    name: str  # the URL's name, with its namespace ("console:tool-edit")
    method: str
    route: str  # the pattern, for messages

    @property
    def writes(self) -> bool:
        return self.method in WRITES

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.method)

    def __str__(self) -> str:
        return f"{self.method} {self.name}"


def _patterns(
    resolver: URLResolver, prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, str, Callable[..., Any]]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _patterns(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}{entry.name}" if entry.name else ""
            yield prefix + str(entry.pattern), name, entry.callback


def declared_methods(view: Callable[..., Any]) -> tuple[str, ...] | None:
    """The methods a function view's ``require_http_methods`` (or ``json_reads``)
    names, read from the list in its wrapper's closure (through any decorators
    around it), or None when it names none."""
    current: Any = view
    while current is not None:
        for cell in current.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if (
                isinstance(value, (list, tuple))
                and value
                and all(isinstance(v, str) and v in (*EVERY, "HEAD") for v in value)
            ):
                return tuple(v for v in value if v != "HEAD")
        current = getattr(current, "__wrapped__", None)
    return None


def allowed_methods(view: Callable[..., Any]) -> tuple[str, ...] | None:
    """The methods the view answers (None: a function view that names none)."""
    actions = getattr(view, "actions", None)
    if actions:  # a DRF viewset route
        return tuple(m.upper() for m in actions if m.upper() in EVERY)
    cls = getattr(view, "cls", None) or getattr(view, "view_class", None)
    if cls is not None:
        return tuple(m for m in EVERY if hasattr(cls, m.lower()))
    return declared_methods(view)


def operations() -> tuple[list[Operation], list[str]]:
    """Every (URL name, method), once; and the function views naming no methods."""
    found: dict[tuple[str, str], Operation] = {}
    undeclared: list[str] = []
    for route, name, view in _patterns(get_resolver()):
        if name.startswith("admin:") or route.startswith("admin/"):
            found.setdefault(("admin:*", "*"), Operation("admin:*", "*", "admin/"))
            continue
        methods = allowed_methods(view)
        if methods is None:
            undeclared.append(f"{name or route} ({view.__module__}.{view.__name__})")
            continue
        for method in methods:
            found.setdefault((name, method), Operation(name, method, route))
    return sorted(found.values(), key=lambda op: op.key), undeclared
