"""Validation: the identified averaged model and the per-wing free-flight model fly the same hover and plate steps.

Run from the repository root::

    python identification/study_validation.py [--quick] [--fresh] [--out DIR]

Settings: ``identification/validation.toml``. Results go to ``out/identify``
(shared with ``flapjax identify``: finished studies are reused).
"""

import sys
from pathlib import Path

from flapjax.cli import app

CONFIG = Path(__file__).with_name("validation.toml")

if __name__ == "__main__":
    app(["identify", "--config", str(CONFIG), "--study", "lift", "--study", "moments", "--study", "damping", "--study", "validation", "--out", "out/identify", *sys.argv[1:]])
