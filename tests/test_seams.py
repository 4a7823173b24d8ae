"""The seams between apps hold (HOUSE_STYLE 1b): read from the source, not by hand."""

from __future__ import annotations

from pathlib import Path

from tests.catalog.test_service_seams import imported_modules

ROOT = Path(__file__).resolve().parents[1]
APPS = ("catalog", "selection", "audit")
VIEW_MODULES = ("views", "api.views", "api.urls")


def _modules(package: str) -> list[tuple[str, Path]]:
    base = ROOT / package
    return [
        (".".join(path.relative_to(ROOT).with_suffix("").parts), path)
        for path in base.rglob("*.py")
        if "migrations" not in path.parts
    ]


def _imports_of(path: Path) -> set[str]:
    return imported_modules(path)


def test_no_app_imports_another_apps_views():
    offenders = []
    for app in APPS:
        others = [f"{o}.{m}" for o in APPS if o != app for m in VIEW_MODULES]
        for name, path in _modules(app):
            bad = [i for i in _imports_of(path) if i.startswith(tuple(others))]
            offenders += [f"{name} imports {b}" for b in bad]
    assert offenders == []


def test_config_imports_no_apps_services():
    offenders = [
        f"{name} imports {i}"
        for name, path in _modules("config")
        for i in _imports_of(path)
        if i.startswith(tuple(f"{app}.services" for app in APPS))
    ]
    assert offenders == []


def test_the_engine_imports_no_django_and_has_no_import_loop():
    engine = ROOT / "selection" / "engine"
    graph: dict[str, set[str]] = {}
    for name, path in _modules("selection/engine"):
        imports = _imports_of(path)
        assert not any(i.startswith("django") for i in imports), name
        graph[name] = {i for i in imports if i.startswith("selection.engine.")}
    assert engine.exists()

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            module = nxt if nxt in graph else nxt.rsplit(".", 1)[0]
            if module == goal:
                return True
            if module not in seen:
                seen.add(module)
                if reaches(module, goal, seen):
                    return True
        return False

    loops = [name for name in graph if reaches(name, name, set())]
    assert loops == []


def test_each_idea_is_written_once():
    sources = {
        name: path.read_text()
        for app in (*APPS, "config")
        for name, path in _modules(app)
    }

    def defining(symbol: str) -> list[str]:
        needle = f"\ndef {symbol}(" if symbol[0].islower() else f"\nclass {symbol}("
        return sorted(name for name, text in sources.items() if needle in text)

    for symbol in (
        "get_catalog_for_user",
        "request_id",
        "split_identifier",
        "definition_tokens",
        "render_page",
        "actor_name",
        "AppendOnlyError",
    ):
        found = defining(symbol)
        assert len(found) <= 1, (symbol, found)
