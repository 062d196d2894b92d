"""Calibrate the feathering hinge of the fixed-base flapper to seed table 11.2.

Targets: cycle-mean world F_z = 0.06618 / 0.14864 / 0.26391 N at 20 / 30 / 40 Hz
(0.6 s runs, first 0.3 s discarded). Unknowns: the feathering stop angle
theta_s, log hinge stiffness and log hinge damping. Method: Levenberg-Marquardt
on the log-force residuals, with the 3 x 3 Jacobian from forward-mode
differentiation (jax.jacfwd) through the full MJX rollout (3 worlds x 6000
steps each, vmapped).

Run: python identification/flapper_calibration.py [theta_s k_h b_h]
"""

import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from flapjax.sim import flapper as fl  # noqa: E402

FREQS = np.array([20.0, 30.0, 40.0])
TARGET = np.array([fl.SEED_SWEEP[f] for f in FREQS])


def main(x0):
    robot = fl.make_robot("fixed", "wing")
    base = fl.sweep_params(FREQS, robot=robot)
    n_steps, discard = 6000, 3000

    def forces(x):
        theta_s, log_k, log_b = x
        p = eqx.tree_at(
            lambda q: (q.hinge.stop_angle, q.hinge.stiffness, q.hinge.damping),
            base,
            (jnp.full(3, theta_s), jnp.full(3, jnp.exp(log_k)), jnp.full(3, jnp.exp(log_b))),
        )
        out = jax.vmap(lambda q: fl.cycle_mean(robot, q, n_steps, discard, checkpoint=False))(p)
        return out.force[:, 2]

    def resid(x):
        return jnp.log(forces(x)) - jnp.log(TARGET)

    f_and_jac = jax.jit(lambda x: (resid(x), jax.jacfwd(resid)(x)))
    x = jnp.asarray(x0, dtype=float)
    lam = 1e-2
    for it in range(8):
        t0 = time.time()
        r, J = f_and_jac(x)
        cost = float(r @ r)
        print(f"it {it} x=[{x[0]:.5f}, k={np.exp(x[1]):.4e}, b={np.exp(x[2]):.4e}] "
              f"rel err % {np.round(100 * (np.exp(np.asarray(r)) - 1), 3)} ({time.time() - t0:.1f} s)", flush=True)
        if np.max(np.abs(np.exp(np.asarray(r)) - 1)) < 0.003:
            break
        A = J.T @ J + lam * jnp.diag(jnp.diag(J.T @ J) + 1e-12)
        dx = -jnp.linalg.solve(A, J.T @ r)
        dx = jnp.clip(dx, -0.3, 0.3)
        x_try = x + dx
        r_try = resid(x_try)
        if float(r_try @ r_try) < cost:
            x, lam = x_try, lam * 0.3
        else:
            lam *= 10.0
    print("final", float(x[0]), float(np.exp(x[1])), float(np.exp(x[2])))


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]] or [0.6, 1e-3, 2e-6]
    main([args[0], np.log(args[1]), np.log(args[2])])
