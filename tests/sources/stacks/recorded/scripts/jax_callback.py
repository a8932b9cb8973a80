"""JAX host callbacks: a jitted step calls back into Python (jax.pure_callback) for a slow host function, and the
loop waits for the result."""

import time

import jax
import jax.numpy as jnp
import numpy as np


def host_metric(x):
    time.sleep(0.05)
    return np.asarray(x).sum(dtype=np.float32)


@jax.jit
def step(x):
    y = jnp.tanh(x)
    return y, jax.pure_callback(host_metric, jax.ShapeDtypeStruct((), jnp.float32), y)


def main() -> None:
    x = jnp.ones((64, 64))
    while True:
        x, metric = step(x)
        jax.block_until_ready(metric)


main()
