"""Multirotor identification from hover logs: ground-effect, near-wall and
drag coefficients of the rotor chain.

- :mod:`flapjax.data.hover_log`: the hover-log columns, reader and writer
  (import them from there);
- :mod:`~flapjax.identify.multirotor.model`: the chain's prediction of the
  accelerometer from logged commands and pose;
- :mod:`~flapjax.identify.multirotor.run`: the fit and its uncertainties
  (:func:`fit_hover`);
- :mod:`flapjax.runs.hover`: plots, the printed table and
  ``results.json`` (:func:`~flapjax.runs.run_hover_identification`);
- :mod:`flapjax.rotor.identified`: results -> ``ChainParams`` (re-exported here)
  (and a profile file's ``[chain]`` table);
- :mod:`~flapjax.sim.multirotor.synthetic_logs`: sample logs from the simulator.

::

    from flapjax.data.hover_log import read_hover_log
    from flapjax.identify.multirotor import chain_params_from_results
    from flapjax.runs import run_hover_identification
    log = read_hover_log("identification/data/hover_quad_x.npz", n_rotors=4)  # checked columns, scene
    res = run_hover_identification("identification/data/hover_quad_x.npz", robot="quad_x", out_dir="out/hover")
    chain = chain_params_from_results("out/hover/results.json")
"""

from flapjax.rotor.identified import CHAIN_KEYS, chain_params_from_results, load_chain_params
from flapjax.identify.multirotor.run import REPORTED, fit_hover

__all__ = ["CHAIN_KEYS", "REPORTED", "chain_params_from_results", "fit_hover", "load_chain_params"]
