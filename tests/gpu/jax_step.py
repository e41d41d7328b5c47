"""jax_step.py — a jitted JAX training step (an MLP, mean squared error,
plain gradient descent) run a few times: prints the losses and the wall
time, so that a run under `lmshim run` can be compared with one without.

usage: jax_step.py [steps]     (default 3; about 2 GiB of memory)
"""
import sys
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_default_matmul_precision", "highest")
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
width, depth, batch = 4096, 8, 8192
keys = jax.random.split(jax.random.PRNGKey(0), depth + 2)
params = [(jax.random.normal(k, (width, width)) * 0.01, jnp.zeros(width)) for k in keys[:depth]]
x = jax.random.normal(keys[-2], (batch, width))
y = jax.random.normal(keys[-1], (batch, width))


def loss_fn(params, x, y):
    h = x
    for w, b in params:
        h = jax.nn.relu(h @ w + b)
    return jnp.mean((h - y) ** 2)


@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


t0 = time.time()
losses = []
for _ in range(steps):
    params, loss = step(params, x, y)
    losses.append(float(loss))
print("losses", " ".join(f"{v:.9g}" for v in losses))
print(f"seconds {time.time() - t0:.3f} devices {jax.devices()}")
