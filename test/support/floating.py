"""Test helpers shared by several test modules (from test_dynamics_floating.py)."""

from __future__ import annotations

from pathlib import Path
import numpy as np
import pinocchio as pin
from support.oracle import assert_close
from coriolis_ros.dynamics import Dynamics


ROOTS = {"floating": pin.JointModelFreeFlyer, "planar": pin.JointModelPlanar}


class MultiDofOracle:
    """Pinocchio in the library's velocity order, for models with free-flyer/planar joints."""

    def __init__(self, urdf: str, dyn: Dynamics, root_joint: str = "fixed"):
        text = Path(urdf).read_text() if "<" not in urdf else urdf
        if root_joint == "fixed":
            self.model = pin.buildModelFromXML(text, mimic=False)
        else:
            self.model = pin.buildModelFromXML(text, ROOTS[root_joint](), mimic=False)
        self.data = self.model.createData()
        m = self.model
        assert m.nv == dyn.nv
        self.v_index = np.empty(dyn.nv, dtype=int)
        # (library q slice start, pinocchio q index, kind) per joint
        self.q_parts = []
        for kind, first, nv, iq in dyn.model.joints():
            name = dyn.joint_names[first].rsplit("/", 1)[0] if nv > 1 else dyn.joint_names[first]
            jid = m.getJointId(name)
            assert jid < m.njoints, f"Pinocchio has no joint {name}"
            assert m.joints[jid].nv == nv, name
            self.v_index[first : first + nv] = m.idx_vs[jid] + np.arange(nv)
            self.q_parts.append((iq, m.idx_qs[jid], m.joints[jid].nq, nv))
        assert sorted(self.v_index) == list(range(m.nv))

    def q_pin(self, q) -> np.ndarray:
        out = np.zeros(self.model.nq)
        for iq, pq, pnq, nv in self.q_parts:
            if nv == 6:  # free flyer: same layout; Pinocchio wants a unit quaternion
                out[pq : pq + 7] = q[iq : iq + 7]
                out[pq + 3 : pq + 7] /= np.linalg.norm(q[iq + 3 : iq + 7])
            elif nv == 3:  # planar: (x, y, theta) -> (x, y, cos, sin)
                out[pq : pq + 4] = q[iq], q[iq + 1], np.cos(q[iq + 2]), np.sin(q[iq + 2])
            elif pnq == 2:  # continuous
                out[pq : pq + 2] = np.cos(q[iq]), np.sin(q[iq])
            else:
                out[pq] = q[iq]
        return out

    def v_pin(self, v) -> np.ndarray:
        out = np.zeros(self.model.nv)
        out[self.v_index] = v
        return out

    def vec(self, x) -> np.ndarray:
        return np.asarray(x)[self.v_index]

    def mat(self, a) -> np.ndarray:
        return np.asarray(a)[np.ix_(self.v_index, self.v_index)]

    def M(self, q):
        mp = np.array(pin.crba(self.model, self.data, self.q_pin(q)))
        return self.mat(np.triu(mp) + np.triu(mp, 1).T)

    def C(self, q, v):
        c = pin.computeCoriolisMatrix(self.model, self.data, self.q_pin(q), self.v_pin(v))
        return self.mat(c)

    def g(self, q):
        return self.vec(pin.computeGeneralizedGravity(self.model, self.data, self.q_pin(q)))

    def rnea(self, q, v, a):
        tau = pin.rnea(self.model, self.data, self.q_pin(q), self.v_pin(v), self.v_pin(a))
        return self.vec(tau)

    def integrate(self, q, v):
        return pin.integrate(self.model, self.q_pin(q), self.v_pin(v))

    def same_configuration(self, q, q_pin_ref, what: str) -> None:
        """Compare after putting each quaternion in the reference's hemisphere (q ~ -q)."""
        ours = self.q_pin(q)
        for _iq, pq, _pnq, nv in self.q_parts:
            if nv == 6 and ours[pq + 3 : pq + 7].dot(q_pin_ref[pq + 3 : pq + 7]) < 0:
                ours[pq + 3 : pq + 7] *= -1.0
        assert_close(ours, q_pin_ref, 1e-12, what)


def random_configuration(dyn: Dynamics, rng, unit: bool = False) -> np.ndarray:
    """Joint coordinates in [-pi, pi], base positions O(1), a random (non-unit) quaternion."""
    q = rng.uniform(-np.pi, np.pi, dyn.nq)
    for kind, _first, nv, iq in dyn.model.joints():
        if nv == 6:
            quat = rng.normal(size=4)
            q[iq + 3 : iq + 7] = quat / np.linalg.norm(quat) if unit else 2.5 * quat
    return q
