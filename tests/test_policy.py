"""The MLP policy's products in float32 in every array module (jax's default on a GPU is TF32)."""

import jax
import jax.numpy as jnp
import numpy as np

from studylib.policy import LAYER_SIZES, mlp_logits, mlp_weights


def test_jax_multiplies_the_policy_at_its_highest_precision():
    """On a GPU jax's default float32 matmul rounds its inputs to TF32 (1.8e-4 off the reference on
    an H100); the traced program must ask for HIGHEST at every layer. Checked in the jaxpr, which
    is what a GPU compiles, so the CPU catches it."""
    layers = [(jnp.asarray(w), jnp.asarray(b)) for w, b in mlp_weights(seed=0).layers()]
    jaxpr = jax.make_jaxpr(lambda o: mlp_logits(layers, o, jnp))(jnp.zeros((8, LAYER_SIZES[0]), jnp.float32))
    precisions = [e.params["precision"] for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert precisions == [(jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)] * 3, precisions


def test_numpy_and_jax_give_the_same_logits():
    weights = mlp_weights(seed=1)
    obs = np.random.default_rng(0).normal(size=(64, LAYER_SIZES[0])).astype(np.float32)
    layers = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights.layers()]
    np.testing.assert_allclose(np.asarray(mlp_logits(layers, jnp.asarray(obs), jnp)),
                               mlp_logits(list(weights.layers()), obs), rtol=1e-5, atol=1e-6)
