"""``coriolis-ros``: the dynamics library from the command line, no ROS needed.

    coriolis-ros compute robot.urdf --q 0.1 0.2 ... --qd 1 0 ... [--format text|json|npz] [-o FILE]
    coriolis-ros check robot.urdf [--samples 20] [--seed 0]

``compute`` prints every term of coriolis_ros/CoriolisState at one state (q, q̇, C, C q̇,
Cᵀ q̇, M, Ṁ, g, p = M q̇) and the Christoffel symbols; the JSON and npz keys are the message
field names (``symbols`` as in GetChristoffelSymbols), the arrays shaped as
``coriolis_ros.messages.state_to_numpy`` returns them: vectors (n,), matrices (n, n),
symbols (n, n, n);
``check`` evaluates the identities the numbers must satisfy on random states of
*your* robot and exits 0 only if every residual is below its tolerance.
Exit codes: 0 success, 1 a check failed, 2 bad arguments or an unusable URDF.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from coriolis_ros.messages import STATE_FIELDS

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2

# Text output: every array field of CoriolisState, under its field name, in message order.
TEXT_TITLES = {
    "position": "q",
    "velocity": "qd",
    "coriolis_matrix": "C (Coriolis matrix, Christoffel-consistent)",
    "coriolis_force": "C qd",
    "coriolis_transpose_force": "C^T qd",
    "mass_matrix": "M (mass matrix)",
    "mass_matrix_derivative": "Mdot = C + C^T",
    "gravity_force": "g (generalized gravity)",
    "momentum": "p = M qd (generalized momentum)",
}


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coriolis-ros",
        description="Coriolis matrix, Christoffel symbols, mass matrix and gravity from a URDF.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("urdf", help="URDF file")
    common.add_argument(
        "--gravity", type=float, nargs=3, default=(0.0, 0.0, -9.81), metavar=("GX", "GY", "GZ")
    )

    compute = sub.add_parser("compute", parents=[common], help="every term at one state")
    compute.add_argument("--q", type=float, nargs="+", help="joint positions (default zeros)")
    compute.add_argument("--qd", type=float, nargs="+", help="joint velocities (default zeros)")
    compute.add_argument("--format", choices=("text", "json", "npz"), default="text")
    compute.add_argument("-o", "--output", help="write to this file instead of standard output")
    compute.add_argument(
        "--no-christoffel", action="store_true", help="leave out symbols (Gamma, n^3 values)"
    )

    check = sub.add_parser("check", parents=[common], help="verify the identities on random states")
    check.add_argument("--samples", type=int, default=20, help="random states (default 20)")
    check.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from coriolis_ros.dynamics import Dynamics, URDFError

    try:
        dyn = Dynamics.from_urdf(args.urdf, gravity=args.gravity)
        if args.command == "compute":
            return _compute(dyn, args)
        return _check(dyn, args)
    except (URDFError, _UsageError) as exc:
        print(f"coriolis-ros: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


# --------------------------------------------------------------------------- compute


def _state(values, n: int, name: str) -> np.ndarray:
    if values is None:
        return np.zeros(n)
    if len(values) != n:
        raise _UsageError(f"--{name} needs {n} values (one per joint), got {len(values)}")
    arr = np.array(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise _UsageError(f"--{name} has a NaN or infinite value")
    return arr


def _compute(dyn, args) -> int:
    n = dyn.nv
    q = _state(args.q, n, "q")
    qd = _state(args.qd, n, "qd")
    M, Mdot, C = dyn.coriolis(q, qd)
    Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
    # Keys and order of msg/CoriolisState.msg (coriolis_ros.messages.STATE_FIELDS), less the
    # measured effort and the observer's external_effort, which need a robot, not a model.
    terms = {
        "joint_names": list(dyn.joint_names),
        "position": q,
        "velocity": qd,
        "coriolis_matrix": C,
        "coriolis_force": Cqd,
        "coriolis_transpose_force": CTqd,
        "mass_matrix": M,
        "mass_matrix_derivative": Mdot,
        "gravity_force": dyn.gravity(q),
        "momentum": p,
    }
    if hasattr(dyn, "position_names"):  # position_names: only where q is not one per joint
        nq = len(dyn.position_names)
        terms["position_names"] = list(dyn.position_names) if nq != dyn.nv else []
    result = {key: terms[key] for key in STATE_FIELDS if key in terms}
    if not args.no_christoffel:
        result["symbols"] = dyn.christoffel(q)

    if args.format == "npz":
        if not args.output:
            raise _UsageError("--format npz needs --output FILE")
        np.savez(args.output, **{k: np.asarray(v) for k, v in result.items()})
        return EXIT_OK
    if args.format == "json":
        text = json.dumps(
            {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in result.items()}, indent=1
        )
    else:
        text = _as_text(dyn, result)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return EXIT_OK


def _as_text(dyn, result: dict) -> str:
    lines = [f"robot {dyn.name}: {dyn.nv} DoF", "joint_names: " + " ".join(dyn.joint_names)]
    with np.printoptions(precision=6, suppress=True, linewidth=160):
        for key, title in TEXT_TITLES.items():
            lines += [f"{key}: {title}", str(result[key])]
        if "symbols" in result:
            lines.append(
                "symbols: Gamma[i] (Christoffel symbols of the 1st kind, "
                "C_ij = sum_k Gamma_ijk qd_k):"
            )
            for i, name in enumerate(dyn.joint_names):
                lines += [f"Gamma[{i}] ({name}):", str(result["symbols"][i])]
    return "\n".join(lines)


# --------------------------------------------------------------------------- check


def _random_state(dyn, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = dyn.nv
    prismatic = np.array([t == "prismatic" for t in dyn.model.joint_types], dtype=bool)
    q = np.where(prismatic, rng.uniform(-0.5, 0.5, n), rng.uniform(-math.pi, math.pi, n))
    return q, rng.uniform(-2.0, 2.0, n), rng.uniform(-2.0, 2.0, n)


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


def check_identities(dyn, samples: int = 20, seed: int = 0) -> list[tuple[str, float, float]]:
    """[(identity, worst relative residual, tolerance)] over random states."""
    rng = np.random.default_rng(seed)
    worst: dict[str, float] = {}
    tol: dict[str, float] = {}

    def record(name, value, tolerance=1e-10):
        worst[name] = max(worst.get(name, 0.0), value)
        tol[name] = tolerance

    n = dyn.nv
    for _ in range(samples):
        q, qd, qdd = _random_state(dyn, rng)
        M, Mdot, C = dyn.coriolis(q, qd)
        g = dyn.gravity(q)
        Gamma = dyn.christoffel(q)
        Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
        h = 1e-6
        fd_Mdot = (dyn.mass_matrix(q + h * qd) - dyn.mass_matrix(q - h * qd)) / (2 * h)
        dM = np.empty((n, n, n))  # dM[i, j, k] = dM_ij / dq_k
        for k in range(n):
            e = np.zeros(n)
            e[k] = h
            dM[:, :, k] = (dyn.mass_matrix(q + e) - dyn.mass_matrix(q - e)) / (2 * h)
        # Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)
        christoffel_fd = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
        record("M symmetric", _rel(M, M.T))
        # Massless DoFs (bodies without <inertial>) make M only semi-definite, as in any
        # dynamics library; a negative eigenvalue beyond round-off is an error.
        eig = np.linalg.eigvalsh(M)
        record("M positive semi-definite", max(0.0, -eig[0]) / max(1.0, eig[-1]))
        record("Mdot = C + C^T", _rel(Mdot, C + C.T))
        record("Mdot = dM/dt (finite differences)", _rel(Mdot, fd_Mdot), 1e-6)
        record("Mdot - 2C skew-symmetric", _rel(Mdot - 2 * C, -(Mdot - 2 * C).T))
        record("C qd = RNEA(q, qd, 0) - g", _rel(C @ qd, dyn.inverse_dynamics(q, qd, 0 * qd) - g))
        tau = dyn.inverse_dynamics(q, qd, qdd)
        record("tau = M qdd + C qd + g (RNEA)", _rel(tau, M @ qdd + C @ qd + g))
        record("C_ij = sum_k Gamma_ijk qd_k", _rel(C, Gamma @ qd))
        record("Gamma_ijk = Gamma_ikj", _rel(Gamma, Gamma.transpose(0, 2, 1)))
        record("Gamma = Christoffel(dM/dq) (finite differences)", _rel(Gamma, christoffel_fd), 1e-6)
        vectors = max(_rel(Cqd, C @ qd), _rel(CTqd, C.T @ qd), _rel(p, M @ qd))
        record("coriolis_vectors = (C qd, C^T qd, M qd)", vectors)
    return [(name, worst[name], tol[name]) for name in worst]


def _check(dyn, args) -> int:
    if args.samples < 1:
        raise _UsageError("--samples must be at least 1")
    rows = check_identities(dyn, args.samples, args.seed)
    print(
        f"robot {dyn.name}: {dyn.nv} DoF, tree depth {dyn.tree_depth}, {args.samples} random states"
    )
    print(f"{'identity':<50} {'worst residual':>15} {'tolerance':>10}  result")
    failed = 0
    for name, value, tolerance in rows:
        ok = value <= tolerance
        failed += not ok
        print(f"{name:<50} {value:>15.3e} {tolerance:>10.0e}  {'ok' if ok else 'FAIL'}")
    print("all identities hold" if not failed else f"{failed} identities FAILED")
    return EXIT_OK if not failed else EXIT_CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
