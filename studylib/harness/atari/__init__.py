"""Atari through ale-py, envpool and gymnasium (the CuLE slides' system, CPU side): emulator frames per second (``frames``) and the engines that produce them (``engines``)."""
