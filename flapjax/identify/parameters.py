"""Trainable vs nominal parameters of a fit.

A study's parameters are a plain ``dict[str, Array]`` of physical values in
SI units; :func:`split` keeps the trained entries apart from the nominal
ones, positive constants in log space (:class:`Trainable`), and
:func:`combine` gives a loss the full dict back.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from flapjax.validation import ConfigError, as_float_array, check_positive

__all__ = ["LossFn", "Nominal", "Params", "Trainable", "combine", "scale_trainable", "split"]

Params = dict[str, Array]
LossFn = Callable[[Params, Any], Array]


class Trainable(eqx.Module):
    """The values an optimizer moves.

    Attributes:
      log: name -> log of a positive constant (any shape) [log SI].
      linear: name -> a signed value, trained as is [SI].
    """

    log: dict[str, Array]
    linear: dict[str, Array]

    def values(self) -> Params:
        """Physical values: ``exp`` of the log entries, the linear ones as is."""
        out = {k: jnp.exp(v) for k, v in self.log.items()}
        out.update(self.linear)
        return out

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names in the order of the flattened vector
        (``jax.flatten_util.ravel_pytree``: the log entries, then the linear
        ones, each sorted by name as JAX orders dict keys), one per leaf."""
        return tuple(path[-1].key for path, _ in jax.tree_util.tree_flatten_with_path(self)[0])


class Nominal(eqx.Module):
    """Values a study needs but does not train (held fixed, no gradient).

    Attributes:
      values: name -> value [SI].
    """

    values: dict[str, Array]


def split(
    values: Mapping[str, Any],
    trainable: Sequence[str],
    *,
    signed: Sequence[str] = (),
) -> tuple[Trainable, Nominal]:
    """Split a parameter dict into trainable and nominal parts.

    Trainable names are positive constants trained in log space, except those
    listed in ``signed`` (trained as they are). Raises :class:`ConfigError`
    for an unknown name or a non-positive value of a log-space parameter.
    """
    unknown = sorted(set(trainable) - set(values))
    if unknown:
        raise ConfigError(f"trainable: unknown parameter(s) {unknown}; known: {sorted(values)}")
    bad_signed = sorted(set(signed) - set(trainable))
    if bad_signed:
        raise ConfigError(f"signed: {bad_signed} are not trainable parameters {list(trainable)}")
    log, linear, nominal = {}, {}, {}
    for name, v in values.items():
        arr = jnp.asarray(as_float_array(name, v))
        if name not in trainable:
            nominal[name] = arr
        elif name in signed:
            linear[name] = arr
        else:
            check_positive(name, arr)
            log[name] = jnp.log(arr)
    return Trainable(log=log, linear=linear), Nominal(values=nominal)


def combine(trainable: Trainable, nominal: Nominal) -> Params:
    """The full physical parameter dict seen by a loss."""
    out = dict(nominal.values)
    out.update(trainable.values())
    return out


def scale_trainable(trainable: Trainable, factors: Mapping[str, float]) -> Trainable:
    """Multiply named trainable values by ``factors`` (e.g. a +30 % start)."""
    log = {k: v + math.log(factors[k]) if k in factors else v for k, v in trainable.log.items()}
    linear = {k: v * factors[k] if k in factors else v for k, v in trainable.linear.items()}
    return Trainable(log=log, linear=linear)
