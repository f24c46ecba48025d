"""Slotine–Li tracking on a simulated arm: the dynamics in-process vs one sample late.

    python examples/slotine_li.py [--robot arm7] [--duration 4] [--rate 1000]

The Slotine–Li law (Slotine & Li, "On the adaptive control of robot manipulators", IJRR 1987,
here with known parameters)

    q̇_r = q̇_d − Λ e,   s = q̇ − q̇_r = ė + Λ e,   e = q − q_d
    τ = M(q) q̈_r + C(q, q̇) q̇_r + g(q) − K s,   K positive definite (here K = k M(q))

needs the Coriolis matrix C itself (C q̇_r, not C q̇), and its stability proof uses
Ṁ − 2C skew-symmetric: exactly what the Christoffel-consistent C of this package gives.

The plant is the same rigid-body model, integrated with semi-implicit Euler at ``--rate``. Two
controllers run on identical trajectories:

* in-process: M, C, g computed from the current sample (q, q̇), as a control loop that calls the
  library does;
* one sample late: M, C, g from the previous sample, as a controller that takes them from the
  ``coriolis_state`` topic gets them (the node publishes the terms of a joint state after that
  joint state was sent, so the loop's current sample uses the last published ones).

Prints the RMS and maximum joint tracking error of both and their ratio.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path


def desired(t: float, q0: np.ndarray, amplitude: float = 0.4, omega: float = 2.0):
    """A smooth reference: q_d = q0 + a sin(ω t + φ_i) per joint, with its derivatives."""
    phase = np.arange(q0.size) * 0.7
    s, c = np.sin(omega * t + phase), np.cos(omega * t + phase)
    return q0 + amplitude * s, amplitude * omega * c, -amplitude * omega**2 * s


def simulate(dyn: Dynamics, duration: float, rate: float, delay: int, state_too: bool = False):
    """Joint tracking errors e(t) (steps × n) of Slotine–Li with M, C, g ``delay`` samples old;
    with ``state_too`` the controller's q, q̇ are that old as well (taken from the message)."""
    n, dt = dyn.nv, 1.0 / rate
    steps = int(round(duration * rate))
    q0 = np.zeros(n)
    # Gains: Λ = 20/s and K = k M(q), k = 50/s (positive definite), so that V = ½ sᵀM s obeys
    # V̇ = −sᵀK s = −2k V: s decays at k in every direction, on the light wrist joints as on
    # the shoulder (M's eigenvalues span 3 decades on arm7; a constant K would be either too
    # stiff for the wrist at this rate or too soft for the shoulder).
    lam, k_gain = 20.0, 50.0
    q, qd, _ = desired(0.0, q0)
    q, qd = q + 0.05, qd.copy()  # start off the reference
    M, Mdot, C, g = np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty(n)
    history = []  # (M, C, g) of past samples, newest last
    errors = np.empty((steps, n))
    for k in range(steps):
        t = k * dt
        q_d, qd_d, qdd_d = desired(t, q0)
        # The terms at this sample (q, q̇): the in-process controller uses them directly.
        dyn.coriolis(q, qd, out=(M, Mdot, C))
        dyn.gravity(q, out=g)
        history.append((M.copy(), C.copy(), g.copy(), q.copy(), qd.copy()))
        Mc, Cc, gc, q_seen, qd_seen = history[max(0, len(history) - 1 - delay)]
        if len(history) > delay + 1:
            history.pop(0)
        if not state_too:
            q_seen, qd_seen = q, qd
        e, ed = q_seen - q_d, qd_seen - qd_d
        qd_r = qd_d - lam * e
        qdd_r = qdd_d - lam * ed
        s = qd_seen - qd_r
        tau = Mc @ (qdd_r - k_gain * s) + Cc @ qd_r + gc
        # Plant: M q̈ + C q̇ + g = τ with the true terms at this sample.
        qdd = np.linalg.solve(M, tau - C @ qd - g)
        errors[k] = q - q_d
        qd = qd + dt * qdd
        q = q + dt * qd
    return errors


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="arm7", help="bundled robot name")
    parser.add_argument("--duration", type=float, default=4.0, help="seconds simulated")
    parser.add_argument("--rate", type=float, default=1000.0, help="control rate (Hz)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.duration) and args.duration > 0):
        parser.error("--duration must be positive")
    if not (math.isfinite(args.rate) and args.rate >= 10):
        parser.error("--rate must be at least 10 Hz")
    dyn = Dynamics.from_urdf(robot_path(args.robot))
    dyn.warmup()
    settle = int(round(0.5 * args.rate))  # leave out the initial transient
    rows = []
    variants = (
        ("in-process", 0, False),
        ("M, C, g 1 late", 1, False),
        ("all 1 late", 1, True),
    )
    for label, delay, state_too in variants:
        e = simulate(dyn, args.duration, args.rate, delay, state_too)[settle:]
        rows.append((label, float(np.sqrt(np.mean(e**2))), float(np.abs(e).max())))
    print(
        f"Slotine-Li tracking, {args.robot} ({dyn.nv} DoF), {args.rate:g} Hz, "
        f"{args.duration:g} s (first 0.5 s left out)"
    )
    header = ("controller uses", "RMS error (rad)", "max error (rad)", "RMS ratio")
    print(f"{header[0]:<16} {header[1]:>16} {header[2]:>16} {header[3]:>10}")
    for label, rms, worst in rows:
        print(f"{label:<16} {rms:>16.3e} {worst:>16.3e} {rms / rows[0][1]:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
