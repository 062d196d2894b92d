"""`make demo`: ``flapjax identify --quick`` into ``./out/identify``.

Identifies the cycle-averaged hover model (k_f, k_roll, k_pitch, D_w, k_v)
from vmapped rollouts of the per-wing model, fits a per-wing physical
parameter by gradient through the rollout, flies both models, writes
``results.json``, ``cycle_averaged.json`` and PNG plots, and prints the
summary. A second run resumes (reuses the finished studies); pass
``--fresh`` to recompute, ``--out DIR`` to write elsewhere.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str] | None = None) -> None:
    from flapjax.cli import app

    args = list(sys.argv[1:] if argv is None else argv)
    if "--out" not in args and "-o" not in args:
        args += ["--out", "out/identify"]
    start = time.perf_counter()
    code = app(["identify", "--quick", *args], standalone_mode=False)
    if code:  # a config error, already reported
        sys.exit(code)
    print(f"flapjax demo: {time.perf_counter() - start:.1f} s wall")


if __name__ == "__main__":
    main()
