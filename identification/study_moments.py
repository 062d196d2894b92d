"""Study 2: k_roll and k_pitch from plate-tilt sweeps at several frequencies.

Run from the repository root::

    python identification/study_moments.py [--quick] [--fresh] [--out DIR]

Settings: ``identification/moments.toml``. Results go to ``out/identify``
(shared with ``flapjax identify``: finished studies are reused).
"""

import sys
from pathlib import Path

from flapjax.cli import app

CONFIG = Path(__file__).with_name("moments.toml")

if __name__ == "__main__":
    app(["identify", "--config", str(CONFIG), "--study", "moments", "--out", "out/identify", *sys.argv[1:]])
