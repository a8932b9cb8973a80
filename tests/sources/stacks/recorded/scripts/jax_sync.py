"""JAX: a jitted step and, after each, the host waiting for it: block_until_ready and a device_get of the loss
(as a loop that logs its loss every step does)."""

import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    for _ in range(20):
        x = jnp.tanh(x @ x)
    return x, jnp.sum(x)


def main() -> None:
    x = jnp.ones((512, 512)) / 512
    while True:
        x, loss = step(x)
        jax.block_until_ready(x)
        jax.device_get(loss)


main()
