"""``cuda``: the hand-written kernel of ``cuda/cartpole_kernel.cu``, launched through CuPy.

One launch runs K steps per environment with the state in registers (simulator kernel fusion,
paper section 4). With the MLP policy each step is one launch plus a CuPy (cuBLAS) inference, as
the paper's CUDA simulation paired with framework inference. Where no CUDA device exists,
``make("cuda", ...)`` raises ``DeviceUnavailableError`` with one line saying so; the same kernel
logic runs on the CPU as the ``cpp`` implementation. The launches go through ``self.backend``
(studylib.native.backends.CudaModuleBackend, kernel pair "cartpole"); stepping, restarts and the arrays
handed out (numpy copies, or torch views of the CuPy buffers by DLPack with ``arrays="native"``)
are studylib/envs/backend_env.py's.
"""

from __future__ import annotations

from . import footprint
from .. import native
from ..native.backends import CudaModuleBackend
from .backend_env import BackendCartPole, NativeChainEnv
from ..sims.cartpole import STATE_SIZE
from ..policy import mlp_logits


class CudaCartPole(BackendCartPole):
    name = "cuda"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.cuda_cartpole(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        import cupy as cp

        self._cp = cp
        self._init_backend(CudaModuleBackend("cartpole", self.num_envs, self.state_factor, self.compute_factor,
                                             self.params))
        self.state = self.backend.state  # (N, 4S) on the GPU; the policy reads the CartPole (columns 0..3) in place
        self._layers = [(cp.asarray(w), cp.asarray(b)) for w, b in self.policy_weights.layers()]
        self._reset()

    def policy_actions(self):
        cp = self._cp
        return cp.argmax(mlp_logits(self._layers, self.state[:, :STATE_SIZE], xp=cp), axis=1).astype(cp.int32)

    def _rollout(self, num_steps, policy):
        if policy == "none":
            return self.backend.rollout(None, num_steps, native.POLICY_HASH, self.seed)  # K steps fused in one launch
        return self.backend.rollout_actions(self.policy_actions, num_steps, self.seed)  # one wait, at the end


class CudaChain(NativeChainEnv):
    """``cuda`` for the n-link chain: cuda/chain_kernel.cu through CuPy, K environment steps of
    the hashed controls per launch, one thread per environment, the state in registers
    (``studylib.sims.chain.cuda_backend.ChainCudaBackend``); with the MLP, one launch per step and
    the Gaussian policy in PyTorch on the host CPU between them (the states copied back each step),
    as CartPole's ``cuda`` pairs its kernel with framework inference. The arrays handed out,
    ``arrays="native"`` included, are host copies (CPU tensors), made once per call. Where no CUDA
    device exists, ``make`` refuses in one line."""

    name = "cuda"  # its record's one device, "cuda": refused in one line without a GPU
