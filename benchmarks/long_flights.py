"""Long flights and big batches moved out of the test suite (they check the
same physics as the suite's smaller versions, at full size).

Run: ``python -m benchmarks.long_flights``; exits non-zero when a check fails.

- near_ground task, 1024 randomized worlds, 1000 steps of one substep: every
  world stays finite, none diverges, the end-effector stays between the
  ground and 1 m (tests/test_tasks.py runs the same flight with 32 worlds).
"""

from __future__ import annotations

import sys
import time

import numpy as np


def near_ground_1024_worlds(n_worlds: int = 1024, n_steps: int = 1000) -> None:
    from flapjax import tasks
    from flapjax.evaluate import run_episodes

    env = tasks.make("near_ground", substeps=1, episode_length=n_steps, **{"randomization.enabled": True})
    res = run_episodes(env, n_worlds=n_worlds, seed=0)
    h = res.trace["ee_height"]
    assert h.shape == (n_steps, n_worlds), h.shape
    assert np.all(np.isfinite(h)) and not res.summary["diverged"].any()
    assert h.min() > 0.0 and h.max() < 1.0, (h.min(), h.max())


CHECKS = {"near_ground_1024_worlds": near_ground_1024_worlds}


def main(argv=None) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)  # as in the test suite
    failed = []
    for name, check in CHECKS.items():
        t0 = time.perf_counter()
        try:
            check()
            status = "ok"
        except AssertionError as exc:
            failed.append(name)
            status = f"FAILED {exc}"
        print(f"{name}: {status} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
