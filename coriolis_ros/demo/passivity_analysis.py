"""Numbers and the picture of the passivity demo, from the processes' logs (ROS-free).

Inputs (dicts of arrays, as the processes write them with ``numpy.savez``):

* plant: ``stamp_ns``, ``q``, ``qd``, ``tau`` (applied from that stamp on), ``tau_ext``;
* controller: ``stamp_ns`` (of the state answered), ``e``, ``s``, ``tau``;
* node (may be empty): ``stamp_ns``, ``external_effort`` (rows of nv, NaN where the message's
  field was empty).

:func:`simulate` closes the same loop in-process (plant, controller, one step of delay), for
tests and to check the ROS run against.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["analyze", "offline_observer", "plot", "simulate", "storage"]


def simulate(scenario, duration: float, dt: float = 1e-3, delay_steps: int = 1):
    """Plant and controller in one process: the command computed from the state at step k is
    applied from step k + ``delay_steps`` on (zero before), as the ROS loop does (one step)
    when the controller answers within one period; ``delay_steps`` 0 is the ideal
    continuous-time controller sampled at dt.  Returns (plant log, controller log), like the
    processes write them (stamps start at 0)."""
    from coriolis_ros.demo.passivity_controller import SlotineLiController
    from coriolis_ros.demo.passivity_plant import RigidBodyPlant

    if int(delay_steps) != delay_steps or delay_steps < 0:
        raise ValueError(f"delay_steps must be a non-negative integer, got {delay_steps!r}")
    dyn = scenario.dynamics()
    reference = scenario.reference(dyn)
    plant = RigidBodyPlant(dyn, reference.position(0.0), np.zeros(dyn.nv), dt, scenario.push(dyn))
    controller = SlotineLiController(dyn, reference, scenario.lam, scenario.kappa)
    steps = int(round(duration / dt))
    n = dyn.nv
    dt_ns = int(round(dt * 1e9))
    plant_log = {
        "stamp_ns": np.arange(steps + 1, dtype=np.int64) * dt_ns,
        "q": np.zeros((steps + 1, n)),
        "qd": np.zeros((steps + 1, n)),
        "tau": np.zeros((steps + 1, n)),
        "tau_ext": np.zeros((steps + 1, n)),
    }
    ctrl_log = {
        "stamp_ns": plant_log["stamp_ns"].copy(),
        "e": np.zeros((steps + 1, n)),
        "s": np.zeros((steps + 1, n)),
        "tau": np.zeros((steps + 1, n)),
    }
    pending = [np.zeros(n) for _ in range(delay_steps)]
    for i in range(steps + 1):
        # copies: the plant's read-only views would take the library's slow conversion path
        command = controller.torque(plant.t, plant.q.copy(), plant.qd.copy()).copy()
        ctrl_log["e"][i] = controller.e
        ctrl_log["s"][i] = controller.s
        ctrl_log["tau"][i] = command
        pending.append(command)
        tau = pending.pop(0)
        plant_log["q"][i] = plant.q
        plant_log["qd"][i] = plant.qd
        plant_log["tau"][i] = tau
        plant_log["tau_ext"][i] = plant.external_torque()
        if i < steps:
            plant.step(tau)
    return plant_log, ctrl_log


def offline_observer(dyn, plant_log, gain) -> np.ndarray:
    """The library's MomentumObserver run over every published state: r per stamp."""
    from coriolis_ros.dynamics import MomentumObserver

    obs = MomentumObserver(dyn, gain)
    stamps = plant_log["stamp_ns"]
    out = np.zeros_like(plant_log["q"])
    t0 = int(stamps[0])
    for i in range(len(stamps)):
        t = (int(stamps[i]) - t0) * 1e-9
        out[i] = obs.update(t, plant_log["q"][i], plant_log["qd"][i], plant_log["tau"][i])
    return out


def storage(dyn, q, s) -> np.ndarray:
    """V = ½ sᵀ M(q) s per row."""
    M = np.zeros((dyn.nv, dyn.nv))
    out = np.zeros(len(q))
    for i in range(len(q)):
        dyn.mass_matrix(q[i], out=M)
        out[i] = 0.5 * s[i] @ M @ s[i]
    return out


def _window(t, lo, hi):
    return (t >= lo) & (t < hi)


def analyze(dyn, scenario, plant_log, ctrl_log, node_log=None, observer_gain=50.0) -> dict:
    """Summary numbers (JSON-able) and the aligned series for :func:`plot`.

    Windows (simulated time): *settled* from 1 s (the initial error has decayed) to the push;
    *push* from 10 observer time constants (1/K_O) after the push starts to its end; *after*
    from 1 s after the push ends to the end.
    """
    stamps = plant_log["stamp_ns"]
    t0 = int(stamps[0])
    t = (stamps - t0) * 1e-9
    push_index = scenario.push_index(dyn)
    true = plant_log["tau_ext"][:, push_index]
    end = float(t[-1])
    push_end = scenario.push_end if scenario.push_end is not None else end
    settle = 10.0 / observer_gain

    # Controller samples aligned with the plant's states by stamp.
    c_t = (ctrl_log["stamp_ns"] - t0) * 1e-9
    row = np.searchsorted(stamps, ctrl_log["stamp_ns"])
    ok = (row < len(stamps)) & (stamps[np.minimum(row, len(stamps) - 1)] == ctrl_log["stamp_ns"])
    e = ctrl_log["e"][ok]
    s = ctrl_log["s"][ok]
    c_t = c_t[ok]
    V = storage(dyn, plant_log["q"][row[ok]], s)

    def tracking(lo, hi):
        sel = _window(c_t, lo, hi)
        if not sel.any():
            return None
        err = np.abs(e[sel])
        return {"max_abs_rad": float(err.max()), "rms_rad": float(np.sqrt((err**2).mean()))}

    windows = {
        "settled": (1.0, scenario.push_start),
        "push": (scenario.push_start + settle, push_end),
        "after": (push_end + 1.0, end + 1.0),
    }
    summary = {
        "robot": dyn.name,
        "dof": dyn.nv,
        "duration_s": end,
        "push": {
            "joint": scenario.push_joint,
            "torque": scenario.push_torque,
            "start_s": scenario.push_start,
            "end_s": scenario.push_end,
        },
        "gains": {"lambda": scenario.lam, "kappa": scenario.kappa, "observer": observer_gain},
        "states_published": int(len(stamps)),
        "states_answered_by_controller": int(ok.sum()),
        "tracking": {name: tracking(*w) for name, w in windows.items()},
        "storage": {
            "initial": float(V[0]) if len(V) else None,
            "max_in_settled": _max(V, _window(c_t, *windows["settled"])),
            "max_in_push": _max(V, _window(c_t, scenario.push_start, push_end)),
        },
    }
    for key in ("missed", "wall_s"):
        if key in plant_log:
            summary["commands_missed" if key == "missed" else "wall_clock_s"] = float(
                plant_log[key]
            )
    if "command_age_ns" in plant_log:
        age = plant_log["command_age_ns"]
        age = age[age >= 0] * 1e-6
        if len(age):
            summary["command_age_ms"] = {
                "p50": float(np.percentile(age, 50)),
                "p99": float(np.percentile(age, 99)),
                "max": float(age.max()),
            }

    offline = offline_observer(dyn, plant_log, observer_gain)
    summary["offline_observer"] = _estimation(t, offline, true, push_index, scenario, settle, end)
    series = {"t": t, "true": true, "offline": offline[:, push_index], "c_t": c_t, "e": e, "V": V}
    series["offline_other"] = np.delete(offline, push_index, axis=1)

    if node_log is not None and len(node_log.get("stamp_ns", ())):
        n_t = (node_log["stamp_ns"] - t0) * 1e-9
        r = node_log["external_effort"]
        have = np.all(np.isfinite(r), axis=1)
        summary["node_messages"] = int(len(n_t))
        summary["node_messages_with_estimate"] = int(have.sum())
        if have.any():
            n_true = np.interp(n_t, t, true)  # true push at the node's stamps (piecewise const)
            idx = np.searchsorted(stamps, node_log["stamp_ns"])
            idx = np.minimum(idx, len(stamps) - 1)
            exact = stamps[idx] == node_log["stamp_ns"]
            n_true = np.where(exact, true[idx], n_true)
            summary["node_observer"] = _estimation(
                n_t[have], r[have], n_true[have], push_index, scenario, settle, end
            )
            both = have & exact
            if both.any():
                diff = np.abs(r[both] - offline[idx[both]])
                summary["node_minus_offline_max"] = float(diff.max())
            series["node_t"] = n_t[have]
            series["node"] = r[have][:, push_index]
    return {"summary": summary, "series": series}


def _max(x, sel):
    return float(x[sel].max()) if sel.any() else None


def _estimation(t, r, true, push_index, scenario, settle, end) -> dict:
    """Steady-state error on the pushed joint, the largest estimate on the others, rise time."""
    push_end = scenario.push_end if scenario.push_end is not None else end + 1.0
    sel = _window(t, scenario.push_start + settle, push_end)
    quiet = _window(t, 1.0, scenario.push_start)
    others = np.delete(r, push_index, axis=1)
    out = {
        "push_error_max": _max(np.abs(r[:, push_index] - true), sel),
        "push_mean": float(r[sel, push_index].mean()) if sel.any() else None,
        "other_joints_max_abs": _max(np.abs(others).max(axis=1), sel | quiet)
        if others.shape[1]
        else 0.0,
        "before_push_max_abs": _max(np.abs(r[:, push_index]), quiet),
    }
    # Time to reach 1 - 1/e of the step (one time constant for a first-order response).
    target = (1.0 - math.exp(-1.0)) * scenario.push_torque
    after = (t >= scenario.push_start) & (t < push_end)
    reached = np.nonzero(after & (np.sign(target) * (r[:, push_index] - target) >= 0))[0]
    out["rise_time_s"] = float(t[reached[0]] - scenario.push_start) if len(reached) else None
    return out


def plot(result: dict, scenario, path: str, title: str | None = None) -> None:
    """Write the three-panel PNG: tracking error, push estimate vs truth, storage function."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series, summary = result["series"], result["summary"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True, constrained_layout=True)
    push_end = scenario.push_end if scenario.push_end is not None else series["t"][-1]
    for ax in axes:
        ax.axvspan(scenario.push_start, push_end, color="0.92", zorder=0)
        ax.grid(True, alpha=0.3)

    ax = axes[0]
    e = series["e"] * 1e3
    for j in range(e.shape[1]):
        ax.plot(series["c_t"], e[:, j], lw=0.8)
    ax.set_ylabel("tracking error e (mrad)")
    lim = max(1e-3, float(np.abs(e[series["c_t"] >= 0.5]).max()) * 1.3) if len(e) else 1.0
    ax.set_ylim(-lim, lim)
    default = f"Slotine–Li tracking on {summary['robot']}, push on {scenario.push_joint}"
    ax.set_title(title or default)

    ax = axes[1]
    ax.plot(series["t"], series["true"], color="k", lw=2.0, label="true push τ_ext")
    if "node" in series:
        ax.plot(series["node_t"], series["node"], color="C3", lw=1.2,
                label="node's observer (coriolis_state.external_effort)")  # fmt: skip
    ax.plot(series["t"], series["offline"], color="C0", lw=1.0, ls="--",
            label="MomentumObserver offline, every state")  # fmt: skip
    other = series["offline_other"]
    if other.shape[1]:
        ax.plot(series["t"], np.abs(other).max(axis=1), color="0.5", lw=0.8,
                label="largest |estimate| on the other joints")  # fmt: skip
    ax.set_ylabel(f"{scenario.push_joint} torque (N·m)")
    ax.legend(loc="upper right", fontsize=8)

    ax = axes[2]
    V = np.maximum(series["V"], 1e-12)
    ax.semilogy(series["c_t"], V, color="C2")
    ax.set_ylabel("storage ½ sᵀ M s (J)")
    ax.set_xlabel("simulated time (s)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
