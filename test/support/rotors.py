"""URDF helpers for the rotor tests: couplings stripped or read, datasheet rotors as links."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from support.floating import MultiDofOracle
from support.oracle import assert_close

from coriolis_ros.dynamics import Dynamics

TOL = 1e-10


def strip_couplings(text: str) -> str:
    root = ET.fromstring(text)
    for c in root.findall("coupling"):
        root.remove(c)
    return ET.tostring(root, encoding="unicode")


def coupled_joints_from_xml(text: str) -> dict[str, tuple[str, float]]:
    """Follower joint -> (leader joint, ratio) from the <coupling> elements (one-joint paths:
    each link's own parent joint)."""
    root = ET.fromstring(text)
    parent_joint = {j.find("child").get("link"): j.get("name") for j in root.findall("joint")}
    out = {}
    for c in root.findall("coupling"):
        pred = parent_joint[c.find("predecessor").get("link")]
        succ = parent_joint[c.find("successor").get("link")]
        out[succ] = (pred, float(c.find("ratio").get("value")))
    return out


def with_rotor_links(text: str, rotors: dict) -> tuple[str, dict[str, tuple[str, float]]]:
    """The URDF with each datasheet rotor written as a link on a continuous joint (the driven
    joint's parent, origin and axis), and the followers."""
    root = ET.fromstring(text)
    joints = {j.get("name"): j for j in root.findall("joint")}
    followers = {}
    for name, spec in rotors.items():
        joint = joints[name]
        link = ET.SubElement(root, "link", name=f"test_rotor_{name}")
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value=str(spec.get("mass", 0.0)))
        i = spec["inertia"]
        ET.SubElement(
            inertial,
            "inertia",
            ixx=str(i[0]),
            iyy=str(i[1]),
            izz=str(i[2]),
            ixy=str(i[3]),
            ixz=str(i[4]),
            iyz=str(i[5]),
        )
        rj = ET.SubElement(root, "joint", name=f"test_rotor_{name}", type="continuous")
        ET.SubElement(rj, "parent", link=joint.find("parent").get("link"))
        ET.SubElement(rj, "child", link=f"test_rotor_{name}")
        for tag in ("origin", "axis"):
            if joint.find(tag) is not None:
                ET.SubElement(rj, tag, dict(joint.find(tag).attrib))
        followers[f"test_rotor_{name}"] = (name, float(spec["gear_ratio"]))
    return ET.tostring(root, encoding="unicode"), followers


def _terms(followers: dict, name: str) -> list[tuple[str, float]]:
    """A follower's (leader, ratio) pairs: ``followers[name]`` is (leader, ratio) or a dict
    {leader: ratio} (a joint that follows a sum); an independent joint is its own leader."""
    spec = followers.get(name, (name, 1.0))
    return list(spec.items()) if isinstance(spec, dict) else [spec]


class Reduced:
    """Pinocchio on the spanning tree ``tree_text`` and A from ``followers`` (follower ->
    (leader, ratio), or {leader: ratio} for a sum), in the order of the independent joints
    ``names``."""

    def __init__(self, tree_text: str, followers: dict, names, root_joint="fixed"):
        self.tree = Dynamics.from_urdf(tree_text, root_joint=root_joint)  # the order only
        self.oracle = MultiDofOracle(tree_text, self.tree, root_joint)
        full = self.tree.joint_names
        assert [n for n in full if n not in followers] == list(names)
        self.A = np.zeros((len(full), len(names)))
        for r, name in enumerate(full):
            for leader, ratio in _terms(followers, name):
                self.A[r, list(names).index(leader)] += ratio
        # configuration: the tree's coordinates are the reduced ones with the followers inserted
        self.q_rows = []
        for name in self.tree.position_names:
            self.q_rows.append((self.tree.position_names.index(name), _terms(followers, name)))

    def q_full(self, dyn, qbar):
        q = np.zeros(self.tree.nq)
        for row, terms in self.q_rows:
            q[row] = sum(ratio * qbar[dyn.position_names.index(leader)] for leader, ratio in terms)
        return q

    def gamma(self, q):
        n = self.A.shape[0]
        G = np.empty((n, n, n))
        for k in range(n):
            G[:, :, k] = self.oracle.C(q, np.eye(n)[k])
        return G


def compare(dyn, ref: Reduced, qbar, qdbar, qddbar, label, tol=TOL):
    A, o = ref.A, ref.oracle
    q, qd, qdd = ref.q_full(dyn, qbar), A @ qdbar, A @ qddbar
    M_ref, C_ref, g_ref = A.T @ o.M(q) @ A, A.T @ o.C(q, qd) @ A, A.T @ o.g(q)
    M, Mdot, C = dyn.coriolis(qbar, qdbar)
    assert_close(M, M_ref, tol, f"{label} Mbar")
    assert_close(C, C_ref, tol, f"{label} Cbar")
    assert_close(Mdot, C_ref + C_ref.T, tol, f"{label} Mdotbar")
    assert_close(dyn.mass_matrix(qbar), M_ref, tol, f"{label} mass_matrix")
    assert_close(dyn.gravity(qbar), g_ref, tol, f"{label} gbar")
    tau = A.T @ o.rnea(q, qd, qdd)
    assert_close(dyn.inverse_dynamics(qbar, qdbar, qddbar), tau, tol, f"{label} taubar")
    Cqd, CTqd, p = dyn.coriolis_vectors(qbar, qdbar)
    assert_close(Cqd, C_ref @ qdbar, tol, f"{label} Cbar qd")
    assert_close(Cqd, A.T @ (o.rnea(q, qd, 0 * qd) - o.g(q)), tol, f"{label} Cbar qd (RNEA)")
    assert_close(CTqd, C_ref.T @ qdbar, tol, f"{label} Cbar^T qd")
    assert_close(p, M_ref @ qdbar, tol, f"{label} pbar")
    x = np.sin(np.arange(dyn.nv) + 1.0)
    assert_close(dyn.coriolis_times(qbar, qdbar, x), C_ref @ x, tol, f"{label} Cbar x")
    got = dyn.slotine_li(qbar, qdbar, x, qddbar)
    assert_close(got, M_ref @ qddbar + C_ref @ x + g_ref, tol, f"{label} Slotine-Li")
    G_ref = np.einsum("ai,bj,ck,abc->ijk", A, A, A, ref.gamma(q), optimize=True)
    G = dyn.christoffel(qbar)
    assert_close(G, G_ref, tol, f"{label} Gammabar")
    assert_close(np.einsum("ijk,k->ij", G, qdbar), C, tol, f"{label} sum Gammabar qd")


def check_by_differences(dyn: Dynamics, q, qd) -> None:
    """Mdot and Gamma against central differences of M (Gamma_ijk = (dM_ij/dq_k +
    dM_ik/dq_j - dM_jk/dq_i) / 2), and the identities Mdot = C + C^T, C qd = RNEA(q, qd, 0)
    - g, C = sum_k Gamma_ijk qd_k, at (q, qd) on a model whose q is its velocity's integral
    (no quaternion)."""
    n = dyn.nv
    M, Mdot, C = dyn.coriolis(q, qd)
    h = 1e-6
    Mdot_fd = (dyn.mass_matrix(q + h * qd) - dyn.mass_matrix(q - h * qd)) / (2 * h)
    assert_close(Mdot, Mdot_fd, 1e-7, "Mdot by differences")
    assert_close(Mdot, C + C.T, TOL, "Mdot = C + C^T")
    z = np.zeros(n)
    assert_close(C @ qd, dyn.inverse_dynamics(q, qd, z) - dyn.gravity(q), TOL, "C qd")
    dM = np.empty((n, n, n))
    for k in range(n):
        e = np.eye(n)[k] * 1e-5
        dM[:, :, k] = (dyn.mass_matrix(q + e) - dyn.mass_matrix(q - e)) / 2e-5
    G_fd = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
    G = dyn.christoffel(q)
    assert_close(G, G_fd, 1e-6, "Gamma by differences")
    assert_close(np.einsum("ijk,k->ij", G, qd), C, TOL, "C = sum_k Gamma qd_k")
