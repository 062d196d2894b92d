"""Counting the programs JAX lowers to XLA, for the retrace tests."""

from __future__ import annotations

import jax


def lowered_programs(fn) -> list[str]:
    """Names of the programs lowered to XLA while ``fn()`` runs and its
    result is computed (a lowering happens whether or not a persistent
    compilation cache then serves the compilation)."""
    names = []

    def listener(event, seconds, **kwargs):
        if event.endswith("jaxpr_to_mlir_module_duration"):
            names.append(str(kwargs.get("fun_name")))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.block_until_ready(fn())
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return names
