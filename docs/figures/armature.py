"""What the armature approximation of geared rotors leaves out, along a trajectory.

    python docs/figures/armature.py [--quick] [--out DIR]

Two robots, each with its rotors modelled exactly (``rotor_model="exact"``: bodies of the tree
spinning at N q̇) and as an armature (``rotor_model="armature"``: N^2 I_axis on M's diagonal,
the rotor's mass and transverse inertia on its parent):

- ``arm7_rotors`` (bundled): harmonic drives, N = 100 and 80;
- ``quadruped12`` (bundled), base fixed and floating, with quasi-direct-drive rotors of N = 6
  (hips) and 9 (knees), I_axis 6.3e-5 kg m^2, 0.055 kg.

Along q(t) = q0 + a sin(w t + phi) (a few seconds, every joint moving), the relative errors
||C_armature - C_exact||_F / ||C_exact||_F, the same for M, and for the torque
tau = M(q) q̈ + C(q, q̇) q̇ + g(q) (inverse dynamics); with a floating base, also over the
legs' rows and columns alone ("joints").  Writes armature.png into --out (default:
next to this script) and prints the numbers docs/rotors.md quotes.  --quick: a short run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path

QUADRUPED_ROTORS = {
    f"{leg}_{joint}": {
        "gear_ratio": 9.0 if joint == "knee_joint" else 6.0,
        "inertia": (
            [6.3e-5, 3.3e-5, 3.3e-5, 0, 0, 0]
            if joint == "hip_abduction_joint"
            else [3.3e-5, 6.3e-5, 3.3e-5, 0, 0, 0]
        ),
        "mass": 0.055,
    }
    for leg in ("FL", "FR", "RL", "RR")
    for joint in ("hip_abduction_joint", "hip_flexion_joint", "knee_joint")
}


def models():
    arm = {"urdf": robot_path("arm7_rotors")}
    quad = {"urdf": robot_path("quadruped12"), "rotors": QUADRUPED_ROTORS}
    return {
        "arm7_rotors (N = 100, 80)": arm,
        "quadruped12, base fixed (N = 6, 9)": quad,
        "quadruped12, floating base": {**quad, "root_joint": "floating"},
    }


def trajectory(dyn: Dynamics, t: np.ndarray, seed: int):
    """States along x(t) = x0 + a sin(w t + phi) in the tangent space (a ~ 1 rad or m, w ~ 2-6
    rad/s): q = integrate(neutral, x), q̇ = ẋ, q̈ = ẍ (a free flyer's orientation included)."""
    n = dyn.nv
    rng = np.random.default_rng(seed)
    x0, a = rng.uniform(-0.5, 0.5, n), rng.uniform(0.5, 1.2, n)
    w, phi = rng.uniform(2.0, 6.0, n), rng.uniform(0, 2 * np.pi, n)
    arg = np.outer(t, w) + phi
    X = x0 + a * np.sin(arg)
    Q = np.array([dyn.integrate(dyn.neutral(), x) for x in X])
    return Q, a * w * np.cos(arg), -a * w * w * np.sin(arg)


def relative(x, ref) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def errors(spec: dict, t: np.ndarray, seed: int) -> dict:
    exact = Dynamics.from_urdf(**spec)
    armature = Dynamics.from_urdf(**spec, rotor_model="armature")
    Q, V, A = trajectory(exact, t, seed)
    base = 6 if spec.get("root_joint") == "floating" else 0  # the free flyer's rows
    out = {"C": [], "M": [], "tau": [], "C joints": [], "M joints": [], "tau joints": []}
    for q, v, a in zip(Q, V, A, strict=True):
        Me, _, Ce = exact.coriolis(q, v)
        Ma, _, Ca = armature.coriolis(q, v)
        te, ta = exact.inverse_dynamics(q, v, a), armature.inverse_dynamics(q, v, a)
        joints = slice(base, None)
        for key, x, ref in (("C", Ca, Ce), ("M", Ma, Me), ("tau", ta, te)):
            out[key].append(relative(x, ref))
            block = (joints, joints) if ref.ndim == 2 else joints
            out[f"{key} joints"].append(relative(x[block], ref[block]))
    return {k: np.array(v) for k, v in out.items()}


def base_rows(name: str) -> bool:
    """Whether the model ``name`` has a free flyer (its joint block is reported too)."""
    return "floating" in name


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (tests)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    t = np.linspace(0.0, 0.5 if args.quick else 4.0, 26 if args.quick else 801)
    results = {name: errors(spec, t, seed) for seed, (name, spec) in enumerate(models().items())}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, (name, err) in zip(axes, results.items(), strict=True):
        ax.semilogy(t, err["C"], label=r"$\|C_a - C\|_F / \|C\|_F$")
        ax.semilogy(t, err["M"], label=r"$\|M_a - M\|_F / \|M\|_F$")
        ax.semilogy(t, err["tau"], label=r"$\|\tau_a - \tau\| / \|\tau\|$ (inverse dynamics)")
        if base_rows(name):
            for key, color in (("C", "C0"), ("M", "C1"), ("tau", "C2")):
                ax.semilogy(t, err[f"{key} joints"], color=color, ls="--", lw=1)
            ax.text(0.02, 0.03, "dashed: the legs' rows and columns only", fontsize=8,
                    transform=ax.transAxes)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("t (s)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("relative error, armature vs exact rotors")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    args.out.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out / "armature.png", dpi=110)
    numbers = {
        name: {
            f"{key} relative error {stat}": float(f(err[key]))
            for key in ("C", "M", "tau", "C joints", "M joints", "tau joints")
            if base_rows(name) or "joints" not in key
            for stat, f in (("median", np.median), ("max", np.max))
        }
        for name, err in results.items()
    }
    print(json.dumps(numbers, indent=1))


if __name__ == "__main__":
    main()
