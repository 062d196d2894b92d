"""An MJX step that reverse mode can differentiate at any solver iteration count.

``mjx.step`` runs the constraint solver (``mujoco.mjx._src.solver.solve``)
in a ``jax.lax.while_loop`` whenever ``opt.iterations > 1``, and JAX cannot
reverse-differentiate a while loop ("Reverse-mode differentiation does not
work for lax.while_loop"); with ``opt.iterations == 1`` the solver runs its
one iteration as straight-line code, and its line search already is a
fixed-length ``lax.scan`` (``_while_loop_scan``), so reverse mode passes.
Forward mode (``jax.jvp``, ``jax.jacfwd``) passes the while loop at any
count (docs/mjx_notes.md, Reverse mode through the solver).

:func:`step_fixed_iterations` is ``mjx.step`` with the solve replaced by
exactly ``iterations`` one-iteration solves, each warm-started from the
last: the same iterates as the while loop for MuJoCo's Newton solver (its
search direction has no memory across iterations; the multirotor MJCF
uses it), without the loop's early stop at ``opt.tolerance``, unrolled, so
reverse mode passes. ``MultirotorWorld(..., unrolled_solver=True)`` steps
with it; use it in a ``lax.scan`` of your own for other MJX models.
"""

from __future__ import annotations

from mujoco import mjx

from flapjax.validation import ConfigError, check_int

__all__ = ["forward_fixed_iterations", "step_fixed_iterations"]


def forward_fixed_iterations(m: mjx.Model, d: mjx.Data, iterations: int) -> mjx.Data:
    """``mjx.forward`` whose constraint solver runs exactly ``iterations``
    (static int >= 1) iterations, unrolled (see the module docstring)."""
    check_int("iterations", iterations, 1)
    if m.opt.solver != mjx.SolverType.NEWTON and iterations > 1:
        raise ConfigError(f"iterations: chaining {iterations} one-iteration solves equals the solver's own loop "
                          f"only for the Newton solver, the model uses {m.opt.solver!r}")
    if m.opt.disableflags & mjx.DisableBit.WARMSTART:
        raise ConfigError("iterations: the chained solves continue through the warm start, which the model disables")
    one = m.replace(opt=m.opt.replace(iterations=1))
    d = mjx.fwd_position(m, d)
    d = mjx.sensor_pos(m, d)
    d = mjx.fwd_velocity(m, d)
    d = mjx.sensor_vel(m, d)
    d = mjx.fwd_actuation(m, d)
    d = mjx.fwd_acceleration(m, d)
    if d._impl.efc_J.size == 0:  # no constraint rows: what mjx.forward does
        return d.replace(qacc=d.qacc_smooth)
    for _ in range(iterations):  # each solve warm-starts from the last iterate when that costs less
        d = mjx.solve(one, d)
        d = d.replace(qacc_warmstart=d.qacc)
    return mjx.sensor_acc(m, d)


def step_fixed_iterations(m: mjx.Model, d: mjx.Data, iterations: int) -> mjx.Data:
    """``mjx.step`` (Euler integrator) with :func:`forward_fixed_iterations`:
    reverse-mode differentiable through contacts at any ``iterations``."""
    if m.opt.integrator != mjx.IntegratorType.EULER:
        raise ConfigError(f"integrator: step_fixed_iterations integrates with Euler, the model uses "
                          f"{m.opt.integrator!r}")
    return mjx.euler(m, forward_fixed_iterations(m, d, iterations))
