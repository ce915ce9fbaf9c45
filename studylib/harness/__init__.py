"""The measurement harness: how the study times, saves and reports its measurements.

One job per module (import the module you need; this package imports none of them, so that
``harness.data.provenance`` costs no jax or torch import):

``timing``       the one timing loop (warm-up apart, adaptive timed regions, repeats)
``measure``      ``measure(MeasurePoint) -> row``: throughput of one point; ``check_feasible``
``sweep``        measure a list of points (or any items) into a data file, resuming
``params``       the command line's grids (``2^8..2^16``) parsed into points
``presets``      what every chapter measures at each preset, and where the data go
``profiler``     paper Fig 5/6: time breakdown and backend-call / kernel counts of one collection
``peers``        other libraries' CartPoles, measured as they ship
``ray_engine``   a sweep's points as Ray tasks on a cluster
``table``        plain-text tables for the command line

and its rooms, one subpackage each:

``data/``        the data-file format, provenance and machine identity, semantics, snapshots
``model/``       the ceilings (roofline), the calibration, the cost model's predictions
``robotics/``    MuJoCo's engines on robotics models, and the n-link chain's measurement plan
``atari/``       Atari frames per second through ale-py, envpool and gymnasium
"""
