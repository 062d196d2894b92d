"""Study 4: per-wing physical parameters by gradient through the MJX rollout, with curvature-based uncertainties.

Run from the repository root::

    python identification/study_physical.py [--quick] [--fresh] [--out DIR]

Settings: ``identification/physical.toml``. Results go to ``out/identify``
(shared with ``flapjax identify``: finished studies are reused).
"""

import sys
from pathlib import Path

from flapjax.cli import app

CONFIG = Path(__file__).with_name("physical.toml")

if __name__ == "__main__":
    app(["identify", "--config", str(CONFIG), "--study", "physical", "--out", "out/identify", *sys.argv[1:]])
