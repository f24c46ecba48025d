"""Geared rotors: what they cost in our C and Γ, and against the Pinocchio route to the same.

    python bench/bench_rotors.py [--quick] [--markdown]

Table 1, the bundled 7-DoF arm without rotors (``arm7``) and with a geared rotor at every joint
(``arm7_rotors``: 7 rotor links on continuous joints, ``<coupling>`` ratios 100 / 80, nv = 7 on
both): our ``coriolis`` (M, Ṁ and C together) and ``christoffel`` (Γ, Algorithm 2), same q, q̇,
preallocated ``out=`` buffers; ratio rotors / no rotors.

Table 2, ``arm7_rotors`` against the Pinocchio route to the same reduced quantities.  Pinocchio
reads the URDF and ignores ``<coupling>``: it sees the 14-joint spanning tree (continuous joints
as (cos, sin)).  A = dq/dq̄ (14 × 7, dense, one nonzero per row) is built here from the XML's
``<coupling>`` elements (ElementTree, not the library's internals).  C̄: one
``computeCoriolisMatrix(q14, v14)`` then ``A.T @ C @ A``; Γ̄: 14 calls of
``computeCoriolisMatrix`` with unit velocities into a (14, 14, 14) array (Γ[:, :, k] = C(q, e_k))
then ``np.einsum('ai,bj,ck,abc->ijk', A, A, A, Γ, optimize=True)``, both parts in the timed call.
q14 and v14 = A q̇ are computed once, outside the timing.  Both of ours are checked against the
route (max |ours - route| / max |route| ≤ 1e-9, asserted) before timing.

Tables 1 and 3 also time the same rotors as an armature (``rotor_model="armature"``: N² I_axis
on M's diagonal, docs/rotors.md), which runs on the same coupled tree (one massless spin row per
rotor, hung from the world), so it is timed, not assumed, to cost about what the exact rotors do.

Table 3, the bundled quadruped (``quadruped12``, floating base, nv = 18) without rotors and with
12 datasheet rotors (``rotors={joint: {gear_ratio, inertia, mass}}``: ratio 6 at the hips, 9 at
the knees, inertia [3.3e-5, 6.3e-5, 3.3e-5, 0, 0, 0] kg m², mass 0.055 kg): our C and Γ, ratio.

Within each table the repeats of all calls are interleaved (they share the background load);
times are µs per call, the median (and min) over the repeats, ratios of the medians.
Benchmarks, not tests: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

REL_TOL = 1e-9
LEGS = ("FL", "FR", "RL", "RR")
LEG_JOINTS = ("hip_abduction_joint", "hip_flexion_joint", "knee_joint")
QUADRUPED_ROTORS = {
    f"{leg}_{joint}": {
        "gear_ratio": 9.0 if joint == "knee_joint" else 6.0,
        "inertia": [3.3e-5, 6.3e-5, 3.3e-5, 0.0, 0.0, 0.0],
        "mass": 0.055,
    }
    for leg in LEGS
    for joint in LEG_JOINTS
}


# ----------------------------------------------------------------------------- A from the XML


def tree_joints_from_xml(text: str) -> tuple[list[str], dict[str, tuple[str, float]]]:
    """The moving joints of the spanning tree (XML order) and follower -> (leader, ratio) from
    the ``<coupling>`` elements: the successor link's joint turns ``ratio`` times as far as the
    predecessor link's joint (gear trains resolved to the independent joint)."""
    root = ET.fromstring(text)
    moving = [j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"]
    parent_joint = {j.find("child").get("link"): j for j in root.findall("joint")}
    direct = {}
    for c in root.findall("coupling"):
        pred = parent_joint[c.find("predecessor").get("link")]
        succ = parent_joint[c.find("successor").get("link")]
        if pred.get("independent") == "false" and succ.get("independent") != "false":
            raise ValueError(f"coupling {c.get('name')!r}: predecessor follows (not handled)")
        ratio = c.find("ratio")
        direct[succ.get("name")] = (pred.get("name"),
                                    1.0 if ratio is None else float(ratio.get("value")))
    followers = {}
    for name, (leader, ratio) in direct.items():
        while leader in direct:
            leader, ratio = direct[leader][0], ratio * direct[leader][1]
        followers[name] = (leader, ratio)
    return moving, followers


def coupling_matrix(rows: list[str], followers: dict, columns) -> np.ndarray:
    """Dense A (len(rows) × len(columns)): row of joint ``rows[r]``, column of its leader."""
    col = {name: c for c, name in enumerate(columns)}
    A = np.zeros((len(rows), len(col)))
    for r, name in enumerate(rows):
        leader, ratio = followers.get(name, (name, 1.0))
        A[r, col[leader]] = ratio
    return A


def pin_gamma_route(pin, model, data, q, eye, G, A):
    """Γ̄ by the Pinocchio route: G[:, :, k] = C(q, e_k) on the tree, then the A.A.A reduction."""
    for k in range(model.nv):
        G[:, :, k] = pin.computeCoriolisMatrix(model, data, q, eye[k])
    return np.einsum("ai,bj,ck,abc->ijk", A, A, A, G, optimize=True)


def ratio(x: float) -> str:
    """Three significant digits (ours / Pinocchio route for Γ is a few hundredths)."""
    return f"{x:#.3g}"


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(got - ref).max() / np.abs(ref).max())


# ----------------------------------------------------------------------------- the arm


def bench_arm(settings: bl.Settings) -> dict:
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_path

    path = robot_path("arm7_rotors")
    plain = Dynamics.from_urdf(robot_path("arm7"))
    geared = Dynamics.from_urdf(path)
    armature = Dynamics.from_urdf(path, rotor_model="armature")
    for dyn in (plain, geared, armature):
        dyn.warmup()
    if plain.joint_names != geared.joint_names:
        raise RuntimeError("arm7 and arm7_rotors have different joint_names")
    n = geared.nv

    # Pinocchio on the spanning tree, A (14 × 7) from the XML, rows in Pinocchio's v order
    moving, followers = tree_joints_from_xml(path.read_text(encoding="utf-8"))
    robot = bl.PinRobot(str(path), moving)
    A_tree = coupling_matrix(moving, followers, geared.joint_names)
    A = np.ascontiguousarray(A_tree[robot.perm])
    nt = robot.nv

    rng = np.random.default_rng(7)
    q, qd = rng.uniform(-2.0, 2.0, n), rng.normal(0.0, 2.0, n)
    qp = robot.q(A_tree @ q)  # zero offsets: q_tree = A q (cos, sin for continuous joints)
    vp = robot.v(A_tree @ qd)
    eye = np.eye(nt)
    G14 = np.empty((nt, nt, nt))

    C_ref = A.T @ pin.computeCoriolisMatrix(robot.model, robot.data, qp, vp) @ A
    G_ref = pin_gamma_route(pin, robot.model, robot.data, qp, eye, G14, A)
    err_C = rel_err(geared.coriolis(q, qd)[2], C_ref)
    err_G = rel_err(geared.christoffel(q), G_ref)
    assert err_C <= REL_TOL, f"arm7_rotors C vs the Pinocchio route: rel. error {err_C:.1e}"
    assert err_G <= REL_TOL, f"arm7_rotors Γ vs the Pinocchio route: rel. error {err_G:.1e}"

    ns = {
        "plain": plain, "geared": geared, "armature": armature, "q": q, "qd": qd,
        "c0": tuple(np.empty((n, n)) for _ in range(3)),
        "c1": tuple(np.empty((n, n)) for _ in range(3)),
        "c2": tuple(np.empty((n, n)) for _ in range(3)),
        "g0": np.empty((n, n, n)), "g1": np.empty((n, n, n)), "g2": np.empty((n, n, n)),
        "pin": pin, "model": robot.model, "data": robot.data, "qp": qp, "vp": vp, "A": A,
        "eye": eye, "G14": G14, "route": pin_gamma_route,
    }  # fmt: skip
    stmts = {
        "C0": "plain.coriolis(q, qd, out=c0)",
        "C1": "geared.coriolis(q, qd, out=c1)",
        "G0": "plain.christoffel(q, out=g0)",
        "G1": "geared.christoffel(q, out=g1)",
        "C2": "armature.coriolis(q, qd, out=c2)",
        "G2": "armature.christoffel(q, out=g2)",
        "pC": "A.T @ pin.computeCoriolisMatrix(model, data, qp, vp) @ A",
        "pG": "route(pin, model, data, qp, eye, G14, A)",
    }
    timings = bl.measure_group({k: (s, ns) for k, s in stmts.items()}, settings)
    return {"nv": n, "nv_tree": nt, "err_C": err_C, "err_G": err_G, **timings}


# ----------------------------------------------------------------------------- the quadruped


def floating_configuration(dyn, rng) -> np.ndarray:
    """Joint angles in [-1, 1], base position O(1), a unit quaternion (x, y, z, w)."""
    q = dyn.neutral().copy()
    names = list(dyn.position_names)
    base = [k for k, name in enumerate(names) if name.startswith(f"{names[0].split('/')[0]}/")]
    joints = [k for k in range(len(names)) if k not in base]
    q[joints] = rng.uniform(-1.0, 1.0, len(joints))
    q[base[:3]] = rng.normal(0.0, 1.0, 3)
    quat = rng.normal(size=4)
    q[base[3:7]] = quat / np.linalg.norm(quat)
    return q


def bench_quadruped(settings: bl.Settings) -> dict:
    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_urdf

    text = robot_urdf("quadruped12")
    plain = Dynamics.from_urdf(text, root_joint="floating")
    geared = Dynamics.from_urdf(text, root_joint="floating", rotors=QUADRUPED_ROTORS)
    armature = Dynamics.from_urdf(
        text, root_joint="floating", rotors=QUADRUPED_ROTORS, rotor_model="armature"
    )
    for dyn in (plain, geared, armature):
        dyn.warmup()
    if plain.position_names != geared.position_names:
        raise RuntimeError("quadruped12 with and without rotors: different coordinates")
    n = geared.nv
    rng = np.random.default_rng(12)
    q, qd = floating_configuration(geared, rng), rng.normal(0.0, 1.0, n)
    ns = {
        "plain": plain, "geared": geared, "armature": armature, "q": q, "qd": qd,
        "c0": tuple(np.empty((n, n)) for _ in range(3)),
        "c1": tuple(np.empty((n, n)) for _ in range(3)),
        "c2": tuple(np.empty((n, n)) for _ in range(3)),
        "g0": np.empty((n, n, n)), "g1": np.empty((n, n, n)), "g2": np.empty((n, n, n)),
    }  # fmt: skip
    stmts = {
        "C0": "plain.coriolis(q, qd, out=c0)",
        "C1": "geared.coriolis(q, qd, out=c1)",
        "G0": "plain.christoffel(q, out=g0)",
        "G1": "geared.christoffel(q, out=g1)",
        "C2": "armature.coriolis(q, qd, out=c2)",
        "G2": "armature.christoffel(q, out=g2)",
    }
    timings = bl.measure_group({k: (s, ns) for k, s in stmts.items()}, settings)
    return {"nv": n, "n_tree": len(geared.tree_joint_names), **timings}


# ----------------------------------------------------------------------------- tables


def rotor_table(res: dict, without: str, with_: str, markdown: bool) -> str:
    headers = ["call", f"{without} (med / min)", f"{with_} (med / min)",
               "rotors / no rotors (med)", "armature (med / min)", "armature / no rotors (med)"]
    rows = []
    for call, a, b, c in (("coriolis (M, Ṁ, C)", "C0", "C1", "C2"),
                          ("christoffel (Γ)", "G0", "G1", "G2")):
        rows.append([call, res[a].fmt(), res[b].fmt(), ratio(res[b].median / res[a].median),
                     res[c].fmt(), ratio(res[c].median / res[a].median)])
    return bl.table(headers, rows, markdown)


def route_table(res: dict, markdown: bool) -> str:
    headers = ["quantity", "ours (med / min)", "Pinocchio route (med / min)",
               "ours / Pinocchio route (med)", "max rel. err"]
    rows = [
        ["C̄ (ours: coriolis, M, Ṁ, C)", res["C1"].fmt(), res["pC"].fmt(),
         ratio(res["C1"].median / res["pC"].median), f"{res['err_C']:.1e}"],
        ["Γ̄ (ours: christoffel)", res["G1"].fmt(), res["pG"].fmt(),
         ratio(res["G1"].median / res["pG"].median), f"{res['err_G']:.1e}"],
    ]  # fmt: skip
    return bl.table(headers, rows, markdown)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = ap.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    md = args.markdown
    t0 = time.perf_counter()
    print(bl.heading("Geared rotors: coriolis_ros.dynamics with and without, vs Pinocchio", md, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if md else line)
    print(f"{'- ' if md else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if md else ''}Times in µs per call; ratios of the medians. Our coriolis "
          "returns M, Ṁ and C; the Pinocchio route C̄ only.")
    print()
    arm = bench_arm(settings)
    print(bl.heading(f"arm7 vs arm7_rotors (nv = {arm['nv']}): ours", md))
    print()
    print(rotor_table(arm, "arm7", "arm7_rotors", md))
    print()
    print(bl.heading(f"arm7_rotors: ours vs Pinocchio on the {arm['nv_tree']}-joint tree "
                     "reduced by A", md))
    print()
    print(route_table(arm, md))
    print()
    quad = bench_quadruped(settings)
    print(bl.heading(f"quadruped12, floating base (nv = {quad['nv']}): no rotors vs 12 "
                     "datasheet rotors, ours", md))
    print()
    print(rotor_table(quad, "no rotors", "12 rotors", md))
    print()
    print(f"(bench_rotors finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
