"""Independent NumPy reference for the per-wing model, built from rigid-body
kinematics (not from the affine formulas) and brute-force strip integration."""

import numpy as np


def rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def stroke_frame(side, k, d0, ds):
    """Root position, stroke-plane frame (before feathering) and its angular
    velocity, all in the body frame, for kinematics dict ``k``."""
    s = side
    root = np.array([0.0, s * d0, ds])
    r1 = ry(-s * k["stroke_plane"])
    r2 = r1 @ rz(s * k["stroke"])
    r3 = r2 @ rx(s * k["deviation"])
    omega_joint = (
        np.array([0.0, -s * k["stroke_plane_rate"], 0.0])
        + r1 @ np.array([0.0, 0.0, s * k["stroke_rate"]])
        + r2 @ np.array([s * k["deviation_rate"], 0.0, 0.0])
    )
    return root, r3, omega_joint


def point_velocity_components(side, k, v_body, w_body, d0, ds, r_w):
    """U_i(r_w), U_o(r_w) of points at spanwise coordinates r_w [m], from
    V = v + w x root + (w + w_joint) x (r_w e_span)."""
    root, frame, omega_joint = stroke_frame(side, k, d0, ds)
    span = frame @ np.array([0.0, side, 0.0])
    e_in, e_out = -frame[:, 0], frame[:, 2]
    v_root = v_body + np.cross(w_body, root)
    v_tip_rate = np.cross(w_body + omega_joint, span)
    vel = v_root[None, :] + np.asarray(r_w)[:, None] * v_tip_rate[None, :]
    return vel @ e_in, vel @ e_out


def whitney_wood(alpha):
    c_n = 1.8 * np.sin(2 * alpha) * np.cos(alpha) + 1.95 * np.sin(alpha) - 1.5 * np.cos(2 * alpha) * np.sin(alpha)
    d_cp = 0.46 - 0.332 * np.cos(alpha) - 0.037 * np.cos(3 * alpha) - 0.013 * np.cos(5 * alpha)
    return c_n, d_cp


def seed_alpha(theta, u_i, u_o):
    """The seed's branchy form: theta + sgn(U_i) pi/2 - atan(U_o/U_i)."""
    return theta + np.sign(u_i) * np.pi / 2 - np.arctan(u_o / u_i)


def strip_loads(side, k, v_body, w_body, *, span, chord_fn, rho, d0, ds, r_cp, n=200_001):
    """Brute-force F_N and M_aero: trapezoid rule over n spanwise strips with
    the local chord c(r) from ``chord_fn`` and C_N at the representative point."""
    r = np.linspace(0.0, span, n)
    ui_cp, uo_cp = point_velocity_components(side, k, v_body, w_body, d0, ds, np.array([r_cp]))
    alpha = seed_alpha(k["pitch"], ui_cp[0], uo_cp[0])
    c_n, d_cp = whitney_wood(alpha)
    ui, uo = point_velocity_components(side, k, v_body, w_body, d0, ds, r)
    c = chord_fn(r)
    f_n = np.trapezoid(0.5 * rho * c_n * c * (ui**2 + uo**2), r)
    m_aero = np.trapezoid(-d_cp * c * 0.5 * rho * c_n * c * (ui**2 + uo**2), r)
    return f_n, m_aero, alpha
