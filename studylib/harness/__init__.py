"""The measurement harness: how the study times, saves and reports its measurements.

One job per module (import the module you need; this package imports none of them, so that
``harness.provenance`` costs no jax or torch import):

``timing``      the one timing loop (warm-up apart, adaptive timed regions, repeats)
``measure``     ``measure(MeasurePoint) -> row``: throughput of one point; ``check_feasible``
``store``       the one data-file format: atomic, locked, resumable by key
``sweep``       measure a list of points (or any items) into a data file, resuming
``provenance``  the machine, software and code version behind a measurement
``profiler``    paper Fig 5/6: time breakdown and backend-call / kernel counts of one collection
``roofline``    this machine's ceilings and the one that binds each measurement
``table``       plain-text tables for the command line
"""
