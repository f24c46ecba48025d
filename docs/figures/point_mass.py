"""Figures 4-7 of Wensing & Slotine's point-mass example (Section IV-A), from the library.

    python docs/figures/point_mass.py [--quick] [--out DIR]

A point mass in 3-D (three prismatic joints, no gravity) tracks a straight line with a varying
speed under the passivity-based law of the paper's eq. (13),

    tau = M^ qdd_r + C~^(q, qd) qd_r - K_D s,   qd_r = qd_d - Lambda q~,   s = qd - qd_r,

with a wrong mass estimate and two factorizations of the (zero) velocity product:
the Christoffel-consistent one, C = 0 (``Dynamics.coriolis``), and the torsion one
C~ = [qd]x (``factorizations.coriolis_factorization`` with psi_012 = -1: skew, and C~ qd = 0).
The plant is the library's forward dynamics of the true mass, M^-1 (tau - C qd - g),
integrated with RK4 (the controller evaluated at every stage: a continuous-time loop).

Writes point_mass_fig4.png ... point_mass_fig7.png into --out (default: next to this script)
and prints the numbers docs/factorizations.md quotes.  --quick: a short run, for the test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.factorizations import coriolis_factorization

URDF = """<robot name="point_mass">
  <link name="world_link"/><link name="x"/><link name="y"/>
  <link name="mass"><inertial><mass value="{mass}"/><origin xyz="0 0 0"/>
    <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="x" type="prismatic"><parent link="world_link"/><child link="x"/>
    <axis xyz="1 0 0"/><limit lower="-100" upper="100" effort="1" velocity="1"/></joint>
  <joint name="y" type="prismatic"><parent link="x"/><child link="y"/>
    <axis xyz="0 1 0"/><limit lower="-100" upper="100" effort="1" velocity="1"/></joint>
  <joint name="z" type="prismatic"><parent link="y"/><child link="mass"/>
    <axis xyz="0 0 1"/><limit lower="-100" upper="100" effort="1" velocity="1"/></joint>
</robot>"""

# The setup (see docs/factorizations.md for how it was chosen)
TRUE_MASS, ESTIMATED_MASS = 1.0, 0.5  # kg
LAMBDA, KD = 2.0, 4.0  # 1/s, N s/m
Q0, QD0 = np.zeros(3), np.array([0.0, -1.0, 0.0])  # at the origin, moving sideways (-y)
PSI = -1.0  # C~ = -psi [qd]x = [qd]x
FACTORIZATIONS = {"Christoffel (torsion-free)": None, "C = S(qd) (torsion)": PSI}


def desired(t):
    """A line along x with a varying speed: x_d = t + sin t (speed 1 + cos t)."""
    return (np.array([t + np.sin(t), 0, 0]), np.array([1 + np.cos(t), 0, 0]),
            np.array([-np.sin(t), 0, 0]))  # fmt: skip


def simulate(psi, seconds: float, dt: float) -> dict:
    plant = Dynamics.from_urdf(URDF.format(mass=TRUE_MASS), gravity=(0, 0, 0))
    model = Dynamics.from_urdf(URDF.format(mass=ESTIMATED_MASS), gravity=(0, 0, 0))

    def control(t, q, qd):
        q_d, qd_d, qdd_d = desired(t)
        qd_r = qd_d - LAMBDA * (q - q_d)
        qdd_r = qdd_d - LAMBDA * (qd - qd_d)
        s = qd - qd_r
        psi_map = None if psi is None else {(0, 1, 2): psi}
        M_hat, _, C_hat = coriolis_factorization(model, q, qd, psi=psi_map)
        return M_hat @ qdd_r + C_hat @ qd_r + model.gravity(q) - KD * s, s

    def f(t, q, qd):
        tau, _ = control(t, q, qd)
        M = plant.mass_matrix(q)
        h = plant.inverse_dynamics(q, qd, np.zeros(3))  # C qd + g
        return qd, np.linalg.solve(M, tau - h)

    steps = int(round(seconds / dt))
    out = {k: np.empty((steps + 1, 3)) for k in ("q", "qd", "q_d", "tau", "s")}
    out["t"], out["V"] = np.arange(steps + 1) * dt, np.empty(steps + 1)
    q, qd = Q0.copy(), QD0.copy()
    for k in range(steps + 1):
        t = k * dt
        tau, s = control(t, q, qd)
        out["q"][k], out["qd"][k], out["q_d"][k], out["tau"][k], out["s"][k] = (
            q,
            qd,
            desired(t)[0],
            tau,
            s,
        )
        out["V"][k] = 0.5 * s @ plant.mass_matrix(q) @ s  # the paper's V (no adaptation)
        if k == steps:
            break
        k1 = f(t, q, qd)
        k2 = f(t + dt / 2, q + dt / 2 * k1[0], qd + dt / 2 * k1[1])
        k3 = f(t + dt / 2, q + dt / 2 * k2[0], qd + dt / 2 * k2[1])
        k4 = f(t + dt, q + dt * k3[0], qd + dt * k3[1])
        q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        qd = qd + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return out


def summary(runs: dict) -> dict:
    """The numbers docs/factorizations.md compares with the paper."""
    out = {}
    for name, r in runs.items():
        e = r["q"] - r["q_d"]
        t = r["t"]
        dtau = np.diff(r["tau"], axis=0) / np.diff(t)[:, None]
        out[name] = {
            "max |e| after 8 s (m)": float(np.abs(e[t >= 8.0]).max()) if t[-1] >= 8 else None,
            "|e| at the end (m)": float(np.linalg.norm(e[-1])),
            "max z (m)": float(r["q"][:, 2].max()),
            "min z (m)": float(r["q"][:, 2].min()),
            "z acceleration at t = 0 (m/s^2)": float(np.gradient(r["qd"][:, 2], t)[0]),
            "rms d(tau)/dt (N/s)": float(np.sqrt(np.mean(np.sum(dtau**2, axis=1)))),
            "V(0), V(1 s), V(5 s), V(end) (J)": [
                float(r["V"][min(np.searchsorted(t, x), t.size - 1)]) for x in (0, 1, 5, t[-1])
            ],
        }
    names = list(runs)
    Va, Vb = runs[names[0]]["V"], runs[names[1]]["V"]
    out["max |V_torsion - V_christoffel| / V(0)"] = float(np.abs(Va - Vb).max() / Va[0])
    return out


def plot(runs: dict, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    labels = ("x", "y", "z")
    for fig_no, name in zip((4, 5), runs, strict=True):
        r = runs[name]
        fig, axes = plt.subplots(2, 1, figsize=(6.4, 5.2), sharex=True)
        for j in range(3):
            axes[0].plot(r["t"], r["q"][:, j], label=f"{labels[j]}")
            axes[0].plot(r["t"], r["q_d"][:, j], "--", color=f"C{j}", lw=0.8)
            axes[1].plot(r["t"], r["qd"][:, j], label=f"d{labels[j]}/dt")
        axes[0].set_ylabel("position (m)")
        axes[1].set_ylabel("velocity (m/s)")
        axes[1].set_xlabel("time (s)")
        axes[0].legend(ncol=3, fontsize=8)
        axes[1].legend(ncol=3, fontsize=8)
        axes[0].set_title(f"Fig. {fig_no}: {name}; dashed: desired")
        fig.tight_layout()
        paths.append(out_dir / f"point_mass_fig{fig_no}.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    fig = plt.figure(figsize=(6.4, 5.2))
    ax = fig.add_subplot(projection="3d")
    for name, r in runs.items():
        ax.plot(r["q"][:, 0], r["q"][:, 1], r["q"][:, 2], label=name)
    r = next(iter(runs.values()))
    ax.plot(r["q_d"][:, 0], r["q_d"][:, 1], r["q_d"][:, 2], "k--", lw=0.8, label="desired")
    ax.scatter([0], [0], [0], color="k", s=10)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    ax.set_title("Fig. 6: paths in 3-D (start at the origin)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out_dir / "point_mass_fig6.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for name, r in runs.items():
        ax.plot(r["t"], r["V"], label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("V = 1/2 s^T M s (J)")
    ax.set_yscale("log")
    ax.set_title("Fig. 7: Lyapunov function")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out_dir / "point_mass_fig7.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s at 10 ms (for the smoke test)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args(argv)
    seconds, dt = (2.0, 1e-2) if args.quick else (10.0, 1e-3)
    runs = {name: simulate(psi, seconds, dt) for name, psi in FACTORIZATIONS.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    for path in plot(runs, args.out):
        print(f"wrote {path}")
    print(json.dumps(summary(runs), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
