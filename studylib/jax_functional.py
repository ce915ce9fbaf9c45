"""The public path of ``studylib.adapters.jax_functional``: CartPole as gymnax-style pure functions (``reset_env``/``step_env`` on frozen params).

``import studylib.jax_functional`` and ``from studylib.jax_functional import ...`` give the very module object of
``studylib.adapters.jax_functional`` (not a copy), so its names, its registration and monkeypatches are shared.
"""

import sys

from .adapters import jax_functional as _module

sys.modules[__name__] = _module
