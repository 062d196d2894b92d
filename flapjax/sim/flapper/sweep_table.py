"""The fixed-base sweep as a table: mean lift against frequency, F_z / f^2,
the seed's table 11.2 where it has a value, and which worlds to distrust."""

from __future__ import annotations

import numpy as np

from flapjax.sim.flapper.health import count_reasons
from flapjax.sim.flapper.sweep import SEED_SWEEP, SweepResult


def print_sweep_table(result: SweepResult, *, file=None) -> None:
    """Print mean lift vs frequency with F_z / f^2 (and the seed's value
    where it has one); a world that diverged, or whose wing force hit the
    clip, is marked, diverged worlds are left out of the spread and counted
    by reason (:mod:`flapjax.sim.flapper.health`)."""
    print(f"{'f [Hz]':>8} {'F_z [N]':>11} {'F_z/f^2 [N/Hz^2]':>18} {'seed F_z [N]':>13} {'diff':>8}", file=file)
    healthy = np.asarray(result.healthy, dtype=bool)
    clipped = np.asarray(result.clip_fraction)
    for f, fz, ok, clip in zip(np.asarray(result.frequency), np.asarray(result.force[:, 2]), healthy, clipped):
        seed = SEED_SWEEP.get(float(f))
        extra = f"{seed:13.5f} {100 * (fz / seed - 1):+7.2f}%" if seed else f"{'':13} {'':8}"
        flag = "  DIVERGED: not a result" if not ok else (f"  force clip {100 * clip:.0f} % of wing-steps" if clip > 0
                                                             else "")
        print(f"{f:8.2f} {fz:11.5f} {fz / f**2:18.5e} {extra}{flag}", file=file)
    ratio = np.asarray(result.lift_per_f2)[healthy]
    if ratio.size > 1:
        spread = (ratio.max() - ratio.min()) / ratio.mean()
        print(f"F_z/f^2 spread (max - min) / mean: {100 * spread:.2f} %", file=file)
    if result.health is not None and not healthy.all():
        reasons = "; ".join(f"{text}: {n}" for text, n in count_reasons(result.health).items())
        print(f"unhealthy worlds: {int(np.sum(~healthy))} of {healthy.size} ({reasons})", file=file)
