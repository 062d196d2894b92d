"""The documentation keeps up with the code: README's "Where things live"
table names every module, docs/README.md links every file in docs/, and
relative links in README.md and docs/ lead to files that exist."""

from __future__ import annotations

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
# Packages whose modules the table need not name one by one (many modules,
# listed in the package's own docstring): their sub-packages still must be.
NAMED_WHOLE = ("flapjax/identify/",)


def table_rows(readme: str) -> list[tuple[str, str]]:
    """``(path cell, description cell)`` of each row of the table under
    ``## Where things live``."""
    section = readme.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not set(cells[0]) <= {"-"} and cells[0] != "Path":
            rows.append((cells[0], " | ".join(cells[1:])))
    return rows


def named_paths(cell: str) -> list[str]:
    """Paths in a path cell; ``rng.py`` after ``flapjax/math.py`` is
    ``flapjax/rng.py`` (relative to the folder of the cell's first path)."""
    tokens = re.findall(r"`([^`]+)`", cell)
    if not tokens:
        return []
    first = tokens[0].rstrip("/")
    base = first.rpartition("/")[0] + "/" if "/" in first else ""
    return [tokens[0]] + [t if t.startswith(base) and base else base + t for t in tokens[1:]]


def covered(rows: list[tuple[str, str]]) -> set[str]:
    """Every module path and package folder the table names: paths in the
    first cell; for a folder there, ``name`` or ``name/`` in its description
    names ``folder/name.py`` or ``folder/name/``."""
    out = set()
    for cell, description in rows:
        names = set(re.findall(r"`([^`]+)`", description))
        for path in named_paths(cell):
            out.add(path)
            if path.endswith("/"):
                out.update(f"{path}{n}.py" for n in names if n.isidentifier())
                out.update(f"{path}{n}" for n in names if n.endswith("/") and n[:-1].isidentifier())
    return out


def required(root: pathlib.Path = REPO) -> set[str]:
    """Each module and package folder under ``flapjax/`` (``__init__.py``
    stands for its folder), relative to the repository."""
    out = set()
    for p in (root / "flapjax").rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        folder = rel.rpartition("/")[0] + "/"
        if any(folder.startswith(w) for w in NAMED_WHOLE) or (p.name == "__init__.py" and folder != "flapjax/"):
            out.add(folder)
        else:
            out.add(rel)
    return out


def missing_from_table(readme: str, root: pathlib.Path = REPO) -> list[str]:
    return sorted(required(root) - covered(table_rows(readme)))


def test_the_table_names_every_module():
    missing = missing_from_table((REPO / "README.md").read_text())
    assert not missing, f"add to README.md's 'Where things live' table: {missing}"


def test_every_path_the_table_names_exists():
    paths = [p for cell, _ in table_rows((REPO / "README.md").read_text()) for p in named_paths(cell)]
    assert len(paths) > 20
    gone = [p for p in paths if not (REPO / p).exists()]
    assert not gone, f"README.md's table names paths that do not exist: {gone}"


def test_docs_index_links_every_doc():
    index = (REPO / "docs" / "README.md").read_text()
    linked = set(re.findall(r"\]\(([^)#\s]+)", index))
    files = sorted(p.name for p in (REPO / "docs").iterdir() if p.is_file() and p.name != "README.md")
    assert "physics.md" in files
    unlinked = [f for f in files if f not in linked]
    assert not unlinked, f"docs/README.md does not link: {unlinked}"


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(REPO).as_posix()
                                                          for p in (REPO / "docs").glob("*.md"))])
def test_relative_links_lead_to_files(page):
    path = REPO / page
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
    broken = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert not broken, f"{page}: links to missing files: {broken}"


def test_the_readme_stays_short_and_keeps_its_sections():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 200
    for heading in ("## Quickstart", "## Tasks and RL", "## Using every core", "## Where things live"):
        assert heading in text, heading


# --- the checks themselves ----------------------------------------------------------


def test_the_table_check_sees_a_module_left_out(tmp_path):
    for rel in ("flapjax/__init__.py", "flapjax/math.py", "flapjax/rng.py", "flapjax/aero/__init__.py",
                "flapjax/aero/wrench.py", "flapjax/aero/hinge.py", "flapjax/identify/__init__.py",
                "flapjax/identify/fit.py", "flapjax/identify/flapper/__init__.py", "flapjax/identify/flapper/run.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    table = ("## Where things live\n\n| Path | What |\n|---|---|\n"
             "| `flapjax/__init__.py`, `math.py`, `rng.py` | helpers |\n"
             "| `flapjax/aero/` | `wrench` (loads), `hinge` |\n"
             "| `flapjax/identify/` | fitting: `flapper/` |\n\n## License\n")
    assert missing_from_table(table, tmp_path) == []
    assert missing_from_table(table.replace(", `hinge`", ""), tmp_path) == ["flapjax/aero/hinge.py"]
    assert missing_from_table(table.replace(", `rng.py`", ""), tmp_path) == ["flapjax/rng.py"]
    assert missing_from_table(table.replace(": `flapper/`", ""), tmp_path) == ["flapjax/identify/flapper/"]
