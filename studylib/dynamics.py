"""The public path of ``studylib.sims.cartpole``: CartPole-v1's dynamics, stated once (float64).

``import studylib.dynamics`` and ``from studylib.dynamics import ...`` give the very module object of
``studylib.sims.cartpole`` (not a copy), so its names and monkeypatches are shared.
"""

import sys

from .sims import cartpole as _module

sys.modules[__name__] = _module
