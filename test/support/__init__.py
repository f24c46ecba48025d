"""Helpers shared by the test modules: references (Pinocchio oracles, random trees, URDF
builders), ROS and bag utilities.  Imported as ``support.<module>`` (``test/`` is on
``sys.path`` through ``test/conftest.py``)."""
