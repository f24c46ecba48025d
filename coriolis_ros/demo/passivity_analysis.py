"""Numbers and the picture of the passivity demo, from the processes' logs (ROS-free).

Inputs (dicts of arrays, as the processes write them with ``numpy.savez``):

* plant: ``stamp_ns``, ``q``, ``qd``, ``tau`` (applied from that stamp on), ``tau_ext`` (the
  push's joint torques over the same step), and from MuJoCo ``energy`` (potential, kinetic),
  ``work`` (actuators, push) and ``tau_ext_end`` (the push's joint torques at that stamp with
  the force of the step ending there), ``constraint_rows``;
* controller: ``stamp_ns`` (of the state answered), ``e``, ``s``, ``tau``;
* node (may be empty): ``stamp_ns``, ``external_effort`` (rows of nv, NaN where the message's
  field was empty).

:func:`simulate` closes the same loop in-process (MuJoCo plant, controller, one step of
delay), for tests and to check the ROS run against.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "analyze",
    "energy_balance",
    "offline_observer",
    "plot",
    "simulate",
    "sliding",
    "storage",
]


def simulate(scenario, duration: float, dt: float = 1e-3, delay_steps: int = 1):
    """Plant (MuJoCo) and controller in one process: the command computed from the state at
    step k is applied from step k + ``delay_steps`` on (zero before), as the ROS loop does (one
    step) when the controller answers within one period; ``delay_steps`` 0 is the ideal
    continuous-time controller sampled at dt.  Returns (plant log, controller log), like the
    processes write them (stamps start at 0; the controller's ``log_row()`` as
    ``controller_<key>``)."""
    from coriolis_ros.demo.passivity_controller import make_controller
    from coriolis_ros.demo.passivity_plant import MujocoPlant

    if int(delay_steps) != delay_steps or delay_steps < 0:
        raise ValueError(f"delay_steps must be a non-negative integer, got {delay_steps!r}")
    dyn = scenario.dynamics()
    reference = scenario.reference(dyn)
    plant = MujocoPlant(scenario.urdf(), dyn.joint_names, reference.position(0.0),
                        np.zeros(dyn.nv), dt, scenario.push(dyn), dyn.gravity_vector)  # fmt: skip
    controller = make_controller(dyn, reference, scenario)
    steps = int(round(duration / dt))
    n = dyn.nv
    dt_ns = int(round(dt * 1e9))
    plant_log = {
        "stamp_ns": np.arange(steps + 1, dtype=np.int64) * dt_ns,
        "q": np.zeros((steps + 1, n)),
        "qd": np.zeros((steps + 1, n)),
        "tau": np.zeros((steps + 1, n)),
        "tau_ext": np.zeros((steps + 1, n)),
        "energy": np.zeros((steps + 1, 2)),
        "work": np.zeros((steps + 1, 2)),
        "tau_ext_end": np.zeros((steps + 1, n)),
        "constraint_rows": np.zeros(steps + 1, dtype=np.int64),
    }
    ctrl_log = {
        "stamp_ns": plant_log["stamp_ns"].copy(),
        "e": np.zeros((steps + 1, n)),
        "s": np.zeros((steps + 1, n)),
        "tau": np.zeros((steps + 1, n)),
    }
    pending = [np.zeros(n) for _ in range(delay_steps)]
    for i in range(steps + 1):
        command = controller.torque(plant.t, plant.q.copy(), plant.qd.copy()).copy()
        ctrl_log["e"][i] = controller.e
        ctrl_log["s"][i] = controller.s
        ctrl_log["tau"][i] = command
        if hasattr(controller, "log_row"):  # as the ROS process logs it
            for key, value in controller.log_row().items():
                name = f"controller_{key}"
                if name not in ctrl_log:
                    ctrl_log[name] = np.zeros((steps + 1, *np.shape(value)))
                ctrl_log[name][i] = value
        pending.append(command)
        tau = pending.pop(0)
        plant_log["q"][i] = plant.q
        plant_log["qd"][i] = plant.qd
        plant_log["tau"][i] = tau
        plant_log["tau_ext"][i] = plant.external_torque()
        plant_log["energy"][i] = plant.energy()
        plant_log["constraint_rows"][i] = plant.constraint_rows
        if i < steps:
            plant.step(tau)
            plant_log["work"][i + 1] = plant.last_work
            plant_log["tau_ext_end"][i + 1] = plant.last_tau_ext_end
    return plant_log, ctrl_log


def storage(dyn, q, s) -> np.ndarray:
    """V = ½ sᵀ M(q) s per row."""
    M = np.zeros((dyn.nv, dyn.nv))
    out = np.zeros(len(q))
    for i in range(len(q)):
        dyn.mass_matrix(q[i], out=M)
        out[i] = 0.5 * s[i] @ M @ s[i]
    return out


def sliding(dyn, scenario, t, q, qd):
    """From the plant's states and the scenario's reference: s = q̇ − q̇_r and the model terms
    h_r = M q̈_r + C(q, q̇) q̇_r + g (the library's, Christoffel-consistent C) per row."""
    reference = scenario.reference(dyn)
    lam = scenario.lam
    s = np.zeros_like(q)
    h_r = np.zeros_like(q)
    for i in range(len(t)):
        e = q[i] - reference.position(t[i])
        ed = qd[i] - reference.velocity(t[i])
        qd_r = reference.velocity(t[i]) - lam * e
        qdd_r = reference.acceleration(t[i]) - lam * ed
        s[i] = qd[i] - qd_r
        dyn.slotine_li(q[i], qd[i], qd_r, qdd_r, out=h_r[i])
    return s, h_r


def energy_balance(dyn, scenario, plant_log) -> dict:
    """The closed loop's storage V = ½ sᵀ M s against what was supplied to it, per state.

    Along the plant's motion (any torque u, push τ_ext), with Ṁ − 2C skew-symmetric,

        V̇ = sᵀ (u + τ_ext − h_r),   h_r = M q̈_r + C q̇_r + g,

    split into the controller's supply sᵀ (u − h_r) (−sᵀ K s = −2κ V for Slotine–Li applied
    without delay) and the push's sᵀ τ_ext.  Integrated by the trapezoid rule with u and the
    push's force held over each step (second order in dt).  The residual V − V(0) − supplied
    is what the plant (MuJoCo) does that the library's model with this C does not predict.

    Also the plant's own passivity: MuJoCo's energy E = T + U against the work of the actuators
    and of the push over each step (exact for forces held over the step), a check of the plant
    that uses nothing of the library.
    """
    t = (plant_log["stamp_ns"] - int(plant_log["stamp_ns"][0])) * 1e-9
    q, qd, u, x = plant_log["q"], plant_log["qd"], plant_log["tau"], plant_log["tau_ext"]
    s, h_r = sliding(dyn, scenario, t, q, qd)
    V = storage(dyn, q, s)
    h = np.diff(t)
    ctrl = 0.5 * h * (np.einsum("ij,ij->i", s[:-1], u[:-1] - h_r[:-1])
                      + np.einsum("ij,ij->i", s[1:], u[:-1] - h_r[1:]))  # fmt: skip
    x_end = plant_log["tau_ext_end"][1:] if "tau_ext_end" in plant_log else x[:-1]
    push = 0.5 * h * (np.einsum("ij,ij->i", s[:-1], x[:-1]) + np.einsum("ij,ij->i", s[1:], x_end))
    ideal = -scenario.kappa * h * (V[:-1] + V[1:])
    controller = np.concatenate(([0.0], np.cumsum(ctrl)))
    pushed = np.concatenate(([0.0], np.cumsum(push)))
    out = {
        "t": t,
        "V": V,
        "s": s,
        "controller_supply": controller,
        "push_supply": pushed,
        "ideal_dissipation": np.concatenate(([0.0], np.cumsum(ideal))),
        "residual": V - V[0] - controller - pushed,
    }
    if "energy" in plant_log and "work" in plant_log:
        E = plant_log["energy"].sum(axis=1)
        work = np.cumsum(plant_log["work"], axis=0)
        out["plant_energy"] = E - E[0]
        out["plant_work"] = work
        out["plant_residual"] = E - E[0] - work.sum(axis=1)
    return out


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


def first_order(t, x, gain) -> np.ndarray:
    """x (rows at stamps t, each held until the next stamp) through ṙ = K_O (x − r), r(t0) = 0,
    discretized exactly: what an ideal momentum observer of gain K_O returns."""
    out = np.zeros_like(x)
    for k in range(1, len(t)):
        a = math.exp(-gain * (t[k] - t[k - 1]))
        out[k] = a * out[k - 1] + (1.0 - a) * x[k - 1]
    return out


def _window(t, lo, hi):
    return (t >= lo) & (t < hi)


def _max(x, sel):
    return float(x[sel].max()) if sel.any() else None


def analyze(dyn, scenario, plant_log, ctrl_log, node_log=None, observer_gain=50.0) -> dict:
    """Summary numbers (JSON-able) and the aligned series for :func:`plot`.

    Windows (simulated time): *settled* from 1 s (the initial error has decayed) to the push;
    *push* from 10 observer time constants (1/K_O) after the push starts to its end; *after*
    from 1 s after the push ends to the end.  The observer's estimate r is compared with the
    push's joint torques τ_ext logged by the plant, on every joint.
    """
    stamps = plant_log["stamp_ns"]
    t0 = int(stamps[0])
    t = (stamps - t0) * 1e-9
    true = plant_log["tau_ext"]
    end = float(t[-1])
    push_end = scenario.push_end if scenario.push_end is not None else end + 1.0
    settle = 10.0 / observer_gain

    # Controller samples aligned with the plant's states by stamp.
    c_t = (ctrl_log["stamp_ns"] - t0) * 1e-9
    row = np.searchsorted(stamps, ctrl_log["stamp_ns"])
    ok = (row < len(stamps)) & (stamps[np.minimum(row, len(stamps) - 1)] == ctrl_log["stamp_ns"])
    e = ctrl_log["e"][ok]
    c_t = c_t[ok]

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
    balance = energy_balance(dyn, scenario, plant_log)
    V = balance["V"]
    scale = float(np.abs(balance["controller_supply"]).max() + np.abs(balance["push_supply"]).max())
    summary = {
        "robot": dyn.name,
        "dof": dyn.nv,
        "plant": "MuJoCo (RK4), built from the same URDF",
        "controller": scenario.controller,
        "controller_parameter_error": scenario.parameter_error,
        "duration_s": end,
        "push": {
            "description": scenario.push_description(dyn),
            "start_s": scenario.push_start,
            "end_s": scenario.push_end,
            "peak_joint_torque": float(np.abs(true).max()),
        },
        "gains": {"lambda": scenario.lam, "kappa": scenario.kappa, "observer": observer_gain},
        "states_published": int(len(stamps)),
        "states_answered_by_controller": int(ok.sum()),
        "tracking": {name: tracking(*w) for name, w in windows.items()},
        "storage": {
            "initial": float(V[0]),
            "max_in_settled": _max(V, _window(t, *windows["settled"])),
            "max_in_push": _max(V, _window(t, scenario.push_start, push_end)),
        },
        "energy_balance": {
            "controller_supply_J": float(balance["controller_supply"][-1]),
            "ideal_dissipation_J": float(balance["ideal_dissipation"][-1]),
            "push_supply_J": float(balance["push_supply"][-1]),
            "residual_max_J": float(np.abs(balance["residual"]).max()),
            "scale_J": scale,
        },
    }
    if "plant_residual" in balance:
        summary["plant_energy_balance"] = {
            "actuator_work_J": float(balance["plant_work"][-1, 0]),
            "push_work_J": float(balance["plant_work"][-1, 1]),
            "energy_change_J": float(balance["plant_energy"][-1]),
            "residual_max_J": float(np.abs(balance["plant_residual"]).max()),
        }
    if "constraint_rows" in plant_log:
        summary["steps_with_a_joint_limit_active"] = int(
            np.count_nonzero(plant_log["constraint_rows"])
        )
    for key in ("missed", "wall_s"):
        if key in plant_log:
            summary["commands_missed" if key == "missed" else "wall_clock_s"] = float(
                plant_log[key]
            )
    if "compute_s" in ctrl_log and len(ctrl_log["compute_s"]):  # the ROS controller's ticks
        us = ctrl_log["compute_s"] * 1e6
        summary["controller_tick_us"] = {
            "p50": float(np.percentile(us, 50)),
            "p99": float(np.percentile(us, 99)),
            "max": float(us.max()),
        }
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
    lagged = first_order(t, true, observer_gain)
    summary["offline_observer"] = _estimation(t, offline, true, lagged, scenario, settle, end)
    series = {"t": t, "true": true, "offline": offline, "c_t": c_t, "e": e, "balance": balance}

    if node_log is not None and len(node_log.get("stamp_ns", ())):
        n_t = (node_log["stamp_ns"] - t0) * 1e-9
        r = node_log["external_effort"]
        have = np.all(np.isfinite(r), axis=1)
        summary["node_messages"] = int(len(n_t))
        summary["node_messages_with_estimate"] = int(have.sum())
        idx = np.minimum(np.searchsorted(stamps, node_log["stamp_ns"]), len(stamps) - 1)
        exact = stamps[idx] == node_log["stamp_ns"]
        use = have & exact  # the node answers plant states: its stamps are the plant's
        summary["node_messages_at_plant_stamps"] = int(use.sum())
        if use.any():
            summary["node_observer"] = _estimation(
                n_t[use], r[use], true[idx[use]], lagged[idx[use]], scenario, settle, end
            )
            summary["node_minus_offline_max"] = float(np.abs(r[use] - offline[idx[use]]).max())
            series["node_t"] = n_t[use]
            series["node"] = r[use]
    return {"summary": summary, "series": series}


def _estimation(t, r, true, lagged, scenario, settle, end) -> dict:
    """The estimate r against the applied joint torques: the largest error on any joint while
    the push is on (after ``settle``) and before it, the peak of the truth, the largest
    difference from the truth through the ideal first-order response (``lagged``, from 0.2 s
    on: the observer's own lag taken out), and the time the largest pushed joint takes to reach
    1 − 1/e of its value."""
    push_end = scenario.push_end if scenario.push_end is not None else end + 1.0
    sel = _window(t, scenario.push_start + settle, push_end)
    quiet = _window(t, 1.0, scenario.push_start)
    err = np.abs(r - true).max(axis=1)
    out = {
        "error_max": _max(err, sel),
        "error_rms": float(np.sqrt(((r[sel] - true[sel]) ** 2).mean())) if sel.any() else None,
        "applied_max": _max(np.abs(true).max(axis=1), sel),
        "before_push_max_abs": _max(np.abs(r).max(axis=1), quiet),
        "error_vs_first_order_max": _max(np.abs(r - lagged).max(axis=1), t >= 0.2),
    }
    on = _window(t, scenario.push_start, push_end)
    if on.any():
        j = int(np.argmax(np.abs(true[on]).max(axis=0)))
        first = true[on][0, j]
        target = (1.0 - math.exp(-1.0)) * first
        reached = np.nonzero(on & (np.sign(first) * (r[:, j] - target) >= 0))[0]
        out["rise_time_s"] = float(t[reached[0]] - scenario.push_start) if len(reached) else None
    return out


def plot(result: dict, scenario, path: str, title: str | None = None) -> None:
    """Write the five-panel PNG: tracking error, push estimate vs the applied joint torques,
    storage, energy balance, and its residuals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series, summary = result["series"], result["summary"]
    fig, axes = plt.subplots(5, 1, figsize=(9, 13.5), sharex=True, constrained_layout=True,
                             gridspec_kw={"height_ratios": [1, 1, 0.8, 1, 0.6]})  # fmt: skip
    t = series["t"]
    push_end = scenario.push_end if scenario.push_end is not None else t[-1]
    for ax in axes:
        ax.axvspan(scenario.push_start, push_end, color="0.92", zorder=0)
        ax.grid(True, alpha=0.3)

    ax = axes[0]
    e = series["e"] * 1e3
    for j in range(e.shape[1]):
        ax.plot(series["c_t"], e[:, j], lw=0.8)
    ax.set_ylabel("tracking error e (mrad)")
    default = (f"{summary['controller']} on {summary['robot']} in MuJoCo; "
               f"push {summary['push']['description']}")  # fmt: skip
    ax.set_title(title or default, fontsize=10)

    ax = axes[1]
    true = series["true"]
    est = series["node"] if "node" in series else series["offline"]
    est_t = series["node_t"] if "node" in series else t
    shown = [j for j in range(true.shape[1]) if np.abs(true[:, j]).max() > 1e-9]
    for k, j in enumerate(shown):
        ax.plot(t, true[:, j], color=f"C{k}", lw=2.2, alpha=0.45)
        ax.plot(est_t, est[:, j], color=f"C{k}", lw=0.9, label=f"joint {j + 1}")
    others = [j for j in range(true.shape[1]) if j not in shown]
    if others:
        ax.plot(est_t, np.abs(est[:, others]).max(axis=1), color="0.4", lw=0.8, ls=":",
                label="largest |estimate|, unpushed joints")  # fmt: skip
    which = "node's observer (coriolis_state.external_effort)" if "node" in series else (
        "MomentumObserver offline")
    ax.set_ylabel("joint torque (N·m)")
    ax.set_title(f"thick: applied J(q)ᵀf from MuJoCo; thin: {which}", fontsize=9)
    ax.legend(loc="upper right", fontsize=7, ncol=2)

    b = series["balance"]
    ax = axes[2]
    ax.semilogy(t, np.maximum(b["V"], 1e-12), color="C2")
    ax.set_ylabel("storage V = ½ sᵀ M s (J)")

    ax = axes[3]
    ax.plot(t, b["V"] - b["V"][0], color="C2", lw=2.0, label="V − V(0)")
    ax.plot(t, b["controller_supply"], color="C0", lw=1.0, label="∫ sᵀ(τ − h_r): controller")
    ax.plot(t, b["push_supply"], color="C3", lw=1.0, label="∫ sᵀ τ_ext: push")
    ax.set_ylabel("energy (J)")
    ax.legend(loc="lower left", fontsize=7)

    ax = axes[4]
    ax.plot(t, b["residual"] * 1e6, color="k", lw=0.9,
            label="V − V(0) − ∫ supplied (closed loop, library's M and C)")  # fmt: skip
    if "plant_residual" in b:
        ax.plot(t, b["plant_residual"] * 1e6, color="C1", lw=0.9,
                label="E − E(0) − work (MuJoCo's energy, the plant alone)")  # fmt: skip
    ax.set_ylabel("residual (µJ)")
    ax.set_xlabel("simulated time (s)")
    ax.legend(loc="lower left", fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)
