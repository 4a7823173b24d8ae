"""The seams between packages hold: every import, at module level or inside a
function, goes down the house or sideways where the layer table allows.

The table is the developers' guide's (docs/how-to/development.md, "Layers"): this
test reads it from there, so the guide and the rule cannot drift apart. Imports
are read from the source (ast), not by importing it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "how-to" / "development.md"
START, END = "<!-- layers: start -->", "<!-- layers: end -->"
NOT_APPLICATION = {"tests"}
VIEW_MODULES = ("views", "api.views", "api.urls")


@dataclass(frozen=True)
class Unit:
    """A row of the table: a package (or a module of one) and where it sits."""

    name: str
    layer: int
    sideways: frozenset[str]


@dataclass(frozen=True)
class Arrow:
    """One import: which module imports what, and on which line."""

    module: str
    line: int
    target: str


def layer_table(text: str | None = None) -> dict[str, Unit]:
    """The table's rows between the markers: layer | names | job | also imports."""
    text = GUIDE.read_text() if text is None else text
    body = text.split(START, 1)[1].split(END, 1)[0]
    units: dict[str, Unit] = {}
    for line in body.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].isdigit():
            continue
        sideways = frozenset(re.findall(r"`([\w.]+)`", cells[3]))
        for name in re.findall(r"`([\w.]+)`", cells[1]):
            units[name] = Unit(name, int(cells[0]), sideways)
    return units


def packages() -> list[str]:
    """Every application package: a top-level folder with an ``__init__.py``."""
    return sorted(
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in NOT_APPLICATION
    )


def modules(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imports_of(module: str, path: Path) -> Iterator[Arrow]:
    """Every module ``path`` imports, wherever the statement is (relative ones
    resolved), with the names imported from it as modules too."""
    if path.name == "__init__.py":
        package = module.removesuffix(".__init__")
    else:
        package = module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Arrow(module, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            yield Arrow(module, node.lineno, base)
            for alias in node.names:
                yield Arrow(module, node.lineno, f"{base}.{alias.name}")


def unit_of(module: str, units: dict[str, Unit]) -> Unit | None:
    """The longest name in the table that is ``module`` or a package holding it."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = units.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def arrows() -> Iterator[Arrow]:
    """Every import between two application packages."""
    ours = set(packages())
    for package in ours:
        for module, path in modules(package):
            for arrow in imports_of(module, path):
                top = arrow.target.split(".")[0]
                if top in ours and top != package:
                    yield arrow


def against(table: dict[str, Unit], arrow: Arrow) -> str:
    """'' when the table allows the arrow, else why not."""
    source, target = unit_of(arrow.module, table), unit_of(arrow.target, table)
    if source is None or target is None or source.name == target.name:
        return ""  # a missing unit fails test_every_package_is_in_the_table
    if target.layer < source.layer:
        return ""
    if target.layer == source.layer and target.name in source.sideways:
        return ""
    return (
        f"{arrow.module}:{arrow.line} imports {arrow.target} "
        f"({source.name}, layer {source.layer} -> {target.name}, layer {target.layer})"
    )


def test_every_package_is_in_the_table_and_every_row_is_a_package():
    table = layer_table()
    tops = {name.split(".")[0] for name in table}
    assert sorted(set(packages()) - tops) == []
    assert sorted(tops - set(packages())) == []
    for name in table:
        path = ROOT / Path(*name.split("."))
        assert path.is_dir() or path.with_suffix(".py").exists(), name


def test_every_import_goes_down_the_house_or_sideways_where_the_table_allows():
    table = layer_table()
    offenders = sorted({why for arrow in arrows() if (why := against(table, arrow))})
    assert offenders == []


def test_the_sideways_arrows_the_table_allows_are_within_a_layer_and_in_use():
    table = layer_table()
    used = {
        (source.name, target.name)
        for arrow in arrows()
        if (source := unit_of(arrow.module, table))
        and (target := unit_of(arrow.target, table))
    }
    for unit in table.values():
        for other in unit.sideways:
            assert table[other].layer == unit.layer, (unit.name, other)
            assert other != unit.name and unit.name not in table[other].sideways
            assert (unit.name, other) in used, f"{unit.name} -> {other} is unused"


def test_an_arrow_up_the_house_or_an_unlisted_sideways_one_is_refused():
    """The rule itself, on a table of its own: it could fail."""
    table = layer_table(
        f"{START}\n| 0 | `low` | x | |\n| 1 | `mid` | x | `side` |\n"
        f"| 1 | `side` | x | |\n| 1 | `other` | x | |\n| 2 | `low.root` | x | |\n{END}"
    )
    assert against(table, Arrow("mid.a", 1, "low.b")) == ""
    assert against(table, Arrow("mid.a", 1, "side.b")) == ""
    assert against(table, Arrow("low.root", 1, "mid.a")) == ""
    assert against(table, Arrow("low.a", 3, "mid.b")) != ""
    assert against(table, Arrow("side.a", 4, "mid.b")) != ""
    assert against(table, Arrow("mid.a", 5, "other.b")) != ""


def test_no_app_imports_another_apps_views():
    table = layer_table()
    offenders = []
    for arrow in arrows():
        source = unit_of(arrow.module, table)
        if source is not None and source.layer == max(u.layer for u in table.values()):
            continue  # the composition root names every app's routes
        top, _, rest = arrow.target.partition(".")
        if any(rest == view or rest.startswith(f"{view}.") for view in VIEW_MODULES):
            offenders.append(f"{arrow.module}:{arrow.line} imports {arrow.target}")
    assert offenders == []


def test_config_imports_no_apps_services():
    offenders = [
        f"{module} imports {arrow.target}"
        for module, path in modules("config")
        for arrow in imports_of(module, path)
        if re.match(r"^\w+\.services(\.|$)", arrow.target)
        and arrow.target.split(".")[0] in packages()
    ]
    assert offenders == []


def test_the_engine_the_model_runtime_and_screening_import_no_django():
    for package in ("selection/engine", "embeddings", "screening"):
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            django = [
                a.target
                for a in imports_of(module, path)
                if a.target.split(".")[0] in {"django", "rest_framework"}
            ]
            assert django == [], module


def test_the_engine_has_no_import_loop():
    """Between the engine's modules (a package's ``__init__`` keeps its name, so
    importing a package's names is not an arrow to each of its modules)."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "selection" / "engine").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        graph[module] = {
            a.target
            for a in imports_of(module, path)
            if a.target.startswith("selection.engine.")
        }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            target = nxt if nxt in graph else nxt.rsplit(".", 1)[0]
            if target == goal:
                return True
            if target not in seen:
                seen.add(target)
                if reaches(target, goal, seen):
                    return True
        return False

    assert graph
    assert [name for name in graph if reaches(name, name, set())] == []


def test_each_idea_is_written_once():
    sources = {
        name: path.read_text()
        for package in packages()
        for name, path in modules(package)
    }

    def defining(symbol: str) -> list[str]:
        needle = f"\ndef {symbol}(" if symbol[0].islower() else f"\nclass {symbol}("
        return sorted(name for name, text in sources.items() if needle in text)

    for symbol in (
        "get_catalog_for_user",
        "access_for",
        "request_id",
        "split_identifier",
        "definition_tokens",
        "render_page",
        "actor_name",
        "AppendOnlyError",
        "RegressionRefused",
    ):
        found = defining(symbol)
        assert len(found) <= 1, (symbol, found)


def graph(table: dict[str, Unit]) -> dict[tuple[str, str], int]:
    """(unit, unit) -> how many import statements, for the printout below."""
    statements: dict[tuple[str, str], set[tuple[str, int]]] = {}
    for arrow in arrows():
        source, target = unit_of(arrow.module, table), unit_of(arrow.target, table)
        if source and target and source != target:
            key = (source.name, target.name)
            statements.setdefault(key, set()).add((arrow.module, arrow.line))
    return {key: len(found) for key, found in statements.items()}


if __name__ == "__main__":  # python -m tests.test_seams: the graph as it is
    table = layer_table()
    for (source, target), count in sorted(graph(table).items()):
        layers = f"{table[source].layer} -> {table[target].layer}"
        print(f"{source} -> {target}  ({count} imports; layers {layers})")
    offenders = sorted({why for arrow in arrows() if (why := against(table, arrow))})
    print("\nagainst the table:", *offenders or ["none"], sep="\n")
