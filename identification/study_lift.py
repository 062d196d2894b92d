"""Study 1: k_f from a vmapped fixed-base frequency sweep, gradient fit vs closed-form least squares.

Run from the repository root::

    python identification/study_lift.py [--quick] [--fresh] [--out DIR]

Settings: ``identification/lift.toml``. Results go to ``out/identify``
(shared with ``flapjax identify``: finished studies are reused).
"""

import sys
from pathlib import Path

from flapjax.cli import app

CONFIG = Path(__file__).with_name("lift.toml")

if __name__ == "__main__":
    app(["identify", "--config", str(CONFIG), "--study", "lift", "--out", "out/identify", *sys.argv[1:]])
