"""The public path of ``studylib.adapters.gym_vector``: gymnasium's vector and single-env API over every implementation
(registers ``studylib/CartPole-v1``, and through ``studylib.adapters.gym_chain`` the chain's
``studylib/InvertedDoublePendulum-v5`` and ``studylib/Chain-v0``).

``import studylib.gym_vector`` and ``from studylib.gym_vector import ...`` give the very module object of
``studylib.adapters.gym_vector`` (not a copy), so its names, its registration and monkeypatches are shared.
"""

import sys

from .adapters import gym_chain as _chain  # noqa: F401 (registers the chain's ids)
from .adapters import gym_vector as _module

sys.modules[__name__] = _module
