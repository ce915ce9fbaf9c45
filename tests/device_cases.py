"""A generic torch environment moved to PyTorch's ``meta`` device, which refuses a CPU tensor beside
its own exactly as CUDA does ("Expected all tensors to be on the same device"): running a
simulator's reset, step and policy code on meta tensors finds, without a GPU, every index or
constant a GPU run would find created on the CPU."""


def on_meta(env):
    """The CPU environment's tensors moved to the meta device, as a CUDA one holds them."""
    env.device = "meta"
    env._native = True
    for name in ("state", "elapsed", "episode", "_env_index", "_obs_now", "_final_obs"):
        setattr(env, name, getattr(env, name).to("meta"))
    env._layers = [(w.to("meta"), b.to("meta")) for w, b in env._layers]
    return env
