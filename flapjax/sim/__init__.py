"""The MuJoCo MJX bridge: the only package that imports MuJoCo.

MJX prints a notice on import when the optional GPU ``warp`` package is absent
(it is not needed here); it is silenced so that command output stays clean.
"""

import contextlib as _contextlib
import io as _io

with _contextlib.redirect_stdout(_io.StringIO()):
    from mujoco import mjx as _mjx  # noqa: F401
