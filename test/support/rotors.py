"""Test helpers shared by several test modules (from test_dynamics_rotors.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def strip_couplings(text: str) -> str:
    root = ET.fromstring(text)
    for c in root.findall("coupling"):
        root.remove(c)
    return ET.tostring(root, encoding="unicode")
