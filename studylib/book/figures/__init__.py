"""What the pages draw with: the charts' shared encodings and finishing (``charts``), and side views of MuJoCo models drawn from their own kinematics (``model_pictures``)."""
