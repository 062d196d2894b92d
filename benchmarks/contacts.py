"""Contact worlds: the MJX X-quad near a wall, full step against bare ``mjx.step``.

For each MJCF variant of the multirotor model, times ``MultirotorWorld.step``
(controller, noise, chain, guard and ``mjx.step``: the body of a rollout)
and the bare ``mjx.step`` of the same model and batch, in the same run, and
prints world-steps/s and their ratio. Variants:

- ``before``: every geom pair collides, implicit-damping pass in the Euler
  step (the model before the contact filtering);
- ``after``: the model as shipped (:func:`flapjax.sim.multirotor.model.multirotor_xml`);
- ``nocontact``: contacts disabled (a lower bound: what the solver costs);
- further solver variants (``it1``, ``it2``, ``ls3``, ``elliptic``, ``mcp4``)
  for choosing the solver settings.

    python -m benchmarks.contacts --worlds 1024 --steps 20 --variants before after
"""

from __future__ import annotations

import argparse
import copy

import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx

from benchmarks import common as C
from benchmarks import workloads as W
from flapjax.sim.multirotor import model as mm

VARIANTS = {
    "before": dict(filtered=False, eulerdamp=True, max_contact_points=-1),
    "after": dict(),
    "nofilter": dict(filtered=False),
    "nocull": dict(max_contact_points=-1),
    "damp": dict(eulerdamp=True),
    "nocontact": dict(_flag='contact="disable"'),
    "it1": dict(iterations=1, max_contact_points=-1),
    "it2": dict(iterations=2, max_contact_points=-1),
    "ls3": dict(ls_iterations=3, max_contact_points=-1),
    "elliptic": dict(cone="elliptic", max_contact_points=-1),
    "mcp4": dict(max_contact_points=4),
    "mcp8": dict(max_contact_points=8),
    "mcp8cg": dict(max_contact_points=8, solver="CG"),
    "cg": dict(max_contact_points=-1, solver="CG"),
    "it10ls20": dict(iterations=10, ls_iterations=20, max_contact_points=-1),
}


def variant_world(name: str, with_box: bool = False):
    """The benchmark's MJX world with the model of variant ``name``."""
    opts = dict(VARIANTS[name])
    flag = opts.pop("_flag", None)
    world = W.multirotor_world(opts.pop("iterations", 3))
    kw = dict(with_box=with_box, timestep=world.dt, iterations=3, ls_iterations=6)
    kw.update(opts)
    if "iterations" in VARIANTS[name]:
        kw["iterations"] = VARIANTS[name]["iterations"]
    xml = mm.multirotor_xml(world.profile, **kw)
    if flag:
        xml = xml.replace("<flag ", f"<flag {flag} ")
    return with_xml(world, xml)


def with_xml(world, xml: str):
    """A copy of ``world`` running the MJCF ``xml`` (same profile and step)."""
    mj_model = mujoco.MjModel.from_xml_string(xml)
    model = mjx.put_model(mj_model)
    new = copy.copy(world)
    for field, value in (("xml", xml), ("mj_model", mj_model), ("model", model), ("data0", mjx.make_data(model))):
        object.__setattr__(new, field, value)
    return new


def workloads(world, n_worlds: int, n_steps: int):
    params, state, ref = W.multirotor_batch(world, n_worlds)
    base = world.ids.base

    def full(params, state, ref):
        def one(p, s, r):
            prepared = world.prepare(p)
            return W._final_only(lambda c: world.step(prepared, c, r)[0], n_steps)(s)
        return jax.vmap(one)(params, state, ref)

    def bare(params, data):
        def one(p, d):
            m = world.prepare(p).model
            lift = jnp.zeros_like(d.xfrc_applied).at[base, 2].set((p.profile.mass * 9.81).astype(d.qpos.dtype))
            return W._final_only(lambda c: mjx.step(m, c), n_steps)(d.replace(xfrc_applied=lift))
        return jax.vmap(one)(params, data)

    return (full, (params, state, ref)), (bare, (params, state.data))


def contact_bare(world, n_worlds: int, n_steps: int, push: float = 2.0):
    """Bare ``mjx.step`` of worlds in contact: weight cancelled and a constant
    ``push`` [N] along +x presses the end-effector against the wall (it
    starts touching), so the solver works every step."""
    params, state, _ = W.multirotor_batch(world, n_worlds)
    base = world.ids.base
    reach = float(world.profile.ee_position[0] + world.profile.ee_radius)
    qpos = state.data.qpos.at[:, 0].set(1.0 - reach).at[:, 1].set(jnp.linspace(-0.2, 0.2, n_worlds))
    data = state.data.replace(qpos=qpos)

    def bare(params, data):
        def one(p, d):
            m = world.prepare(p).model
            f = jnp.zeros_like(d.xfrc_applied).at[base, 0].set(push)
            f = f.at[base, 2].set((p.profile.mass * 9.81).astype(d.qpos.dtype))
            return W._final_only(lambda c: mjx.step(m, c), n_steps)(d.replace(xfrc_applied=f))
        return jax.vmap(one)(params, data)

    return bare, (params, data)


def profile_stages(world, n_worlds: int, n_steps: int, repeats: int) -> None:
    """Where the full step's time goes beyond bare ``mjx.step``: the MJX
    advance of the step alone, then with the divergence guard's selection
    between the new and the old ``mjx.Data`` (every field), then the full
    step, each under the same scan."""
    from flapjax.sim.backend import is_finite_state, keep_good
    from flapjax.sim.multirotor.backends import MJX

    params, state, ref = W.multirotor_batch(world, n_worlds)
    w = jnp.zeros(6).at[2].set(float(world.profile.mass) * 9.81)

    def stage(guard: bool):
        def fn(params, data):
            def one(p, d):
                prepared = world.prepare(p)

                def step(c):
                    new = MJX.advance(world, prepared, c, w.astype(c.qpos.dtype))[0]
                    return keep_good(is_finite_state(new.qpos, new.qvel), new, c) if guard else new
                return W._final_only(step, n_steps)(d)
            return jax.vmap(one)(params, data)
        return fn

    ws = n_worlds * n_steps
    for name, fn, args in (("advance", stage(False), (params, state.data)),
                           ("advance+guard select", stage(True), (params, state.data))):
        r = C.measure(fn, args, world_steps=ws, repeats=repeats)
        print({"stage": name, "ws": round(r["steps_per_s"], 1),
               "ms_per_batch_step": round(1e3 * r["steady_s"] / n_steps, 2)}, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", nargs="+", default=["before", "after"], choices=sorted(VARIANTS))
    ap.add_argument("--bare-only", action="store_true")
    ap.add_argument("--clear", action="store_true",
                    help="start 0.1 m further from the wall (the default start puts the end-effector inside it)")
    ap.add_argument("--profile", action="store_true",
                    help="time the MJX advance alone and with the guard's Data selection (shipped model)")
    ap.add_argument("--contact", action="store_true",
                    help="bare mjx.step only, every world pressed against the wall (the solver at work)")
    ap.add_argument("--wrapper", action="store_true",
                    help="also time the same step on the rigid backend (everything but MJX), with and "
                         "without the sensor-noise draws")
    args = ap.parse_args(argv)
    print(C.env_info())
    if not args.clear:  # the workloads start clear of the wall; this study times the contact by default
        W.WALL_POSITION = W.WALL_CONTACT_POSITION
    if args.wrapper:
        for noise in (True, False):
            wl = W.multirotor_rigid(args.worlds, args.steps, sensor_noise=noise)
            r = C.measure(wl.fn, wl.args, world_steps=wl.world_steps, repeats=args.repeats)
            print({"variant": wl.name, "full_ws": round(r["steps_per_s"], 1), "compile_s": round(r["compile_s"], 1)},
                  flush=True)
    if args.profile:
        profile_stages(variant_world("after"), args.worlds, args.steps, args.repeats)
    rows = []
    for name in args.variants:
        world = variant_world(name)
        if args.contact:
            fn, fa = contact_bare(world, args.worlds, args.steps)
            r = C.measure(fn, fa, world_steps=args.worlds * args.steps, repeats=args.repeats)
            out = r["_out"]
            row = dict(variant=name, contact_bare_ws=round(r["steps_per_s"], 1), compile_s=round(r["compile_s"], 1),
                       wall_force_mean=round(float(jnp.mean(out.qfrc_constraint[:, 0])), 4),
                       x_mean=round(float(jnp.mean(out.qpos[:, 0])), 6),
                       vx_rms=round(float(jnp.sqrt(jnp.mean(out.qvel[:, 0] ** 2))), 6))
            print(row, flush=True)
            continue
        (full, fa), (bare, ba) = workloads(world, args.worlds, args.steps)
        ws = args.worlds * args.steps
        rb = C.measure(bare, ba, world_steps=ws, repeats=args.repeats)
        rf = None if args.bare_only else C.measure(full, fa, world_steps=ws, repeats=args.repeats)
        row = dict(variant=name, ncon=int(world.data0._impl.ncon), nefc=int(world.data0._impl.efc_J.shape[0]),
                   bare_ws=rb["steps_per_s"], bare_compile_s=rb["compile_s"])
        if rf is not None:
            row.update(full_ws=rf["steps_per_s"], full_compile_s=rf["compile_s"],
                       full_over_bare=rb["steps_per_s"] / rf["steps_per_s"])
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if len(rows) > 1 and "full_ws" in rows[0] and "full_ws" in rows[-1]:
        print(f"full step, {rows[-1]['variant']} / {rows[0]['variant']}: {rows[-1]['full_ws'] / rows[0]['full_ws']:.2f}x")


if __name__ == "__main__":
    main()
