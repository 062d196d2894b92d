"""Notebooks are kept in git without outputs (they are executed by the suite)."""

import json
import pathlib

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2


def test_notebooks_have_no_stored_outputs():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code":
                assert cell.get("outputs", []) == [], f"{path.name} cell {i} has stored outputs"
                assert cell.get("execution_count") is None, f"{path.name} cell {i} has an execution count"
