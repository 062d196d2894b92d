"""Study 3: D_w and k_v from imposed body rates and speeds (driven base); flaps at the hover frequency of study 1 (run or reused).

Run from the repository root::

    python identification/study_damping.py [--quick] [--fresh] [--out DIR]

Settings: ``identification/damping.toml``. Results go to ``out/identify``
(shared with ``flapjax identify``: finished studies are reused).
"""

import sys
from pathlib import Path

from flapjax.cli import app

CONFIG = Path(__file__).with_name("damping.toml")

if __name__ == "__main__":
    app(["identify", "--config", str(CONFIG), "--study", "lift", "--study", "damping", "--out", "out/identify", *sys.argv[1:]])
