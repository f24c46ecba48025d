"""Test helpers shared by several test modules (from test_dynamics_mimic.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
import numpy as np
from support.oracle import PinOracle
from coriolis_ros.dynamics import Dynamics


def mimic_tags(urdf_text: str) -> dict[str, tuple[str, float, float]]:
    """Moving joint -> (direct leader, multiplier, offset) from the XML (fixed joints skipped)."""
    root = ET.fromstring(urdf_text)
    out = {}
    for joint in root.findall("joint"):
        tag = joint.find("mimic")
        if tag is None or joint.get("type") == "fixed":
            continue
        out[joint.get("name")] = (
            tag.get("joint"),
            float(tag.get("multiplier", 1.0)),
            float(tag.get("offset", 0.0)),
        )
    return out


def resolve(tags):
    out = {}
    for name in tags:
        leader, m, o = tags[name]
        while leader in tags:
            l2, m2, o2 = tags[leader]
            leader, m, o = l2, m * m2, m * o2 + o
        out[name] = (leader, m, o)
    return out


class Reference:
    """Pinocchio (mimic=False) in the full joint order of an independent-mode library model."""

    def __init__(self, urdf: str):
        text = Path(urdf).read_text() if "<" not in urdf else urdf
        self.full = Dynamics.from_urdf(urdf, mimic="independent")
        self.oracle = PinOracle(urdf, order=self.full.joint_names)
        self.mimic = resolve(mimic_tags(text))
        names = self.full.joint_names
        self.indep = [n for n in names if n not in self.mimic]
        A = np.zeros((len(names), len(self.indep)))
        offset = np.zeros(len(names))
        for r, name in enumerate(names):
            leader, m, o = self.mimic.get(name, (name, 1.0, 0.0))
            A[r, self.indep.index(leader)] = m
            offset[r] = o
        self.A, self.offset = A, offset

    def q_full(self, qbar):
        return self.A @ qbar + self.offset

    def gamma(self, q):
        n = self.oracle.n
        G = np.empty((n, n, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            G[:, :, k] = self.oracle.C(q, e)
        return G
