"""The cost model: this machine's ceilings (``roofline``), the calibration of per-call costs (``calibrate``), and the predictions made from them before measuring (``costmodel``)."""
