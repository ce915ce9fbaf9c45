"""The CartPoles: the seven implementations (one ``*_env`` module each), the base class they share
(``base``), the engine the native ones share (``backend_env``) and ``registry.make``."""
