"""Adaptive against fixed parameters in the MuJoCo loop: numbers and the picture (ROS-free).

Three loops on the same plant, reference and push (:func:`compare`):

* ``true``: Slotine–Li with the URDF's parameters (the plant's, to rounding);
* ``wrong``: Slotine–Li with the scenario's wrong parameters, fixed;
* ``adaptive``: :class:`~coriolis_ros.demo.passivity_adaptive.AdaptiveSlotineLi` starting from
  the same wrong parameters.

Per state: the tracking error ‖e‖ (2-norm over the joints, rad); the torque the controller's
parameters get wrong on the model terms, ‖Y(q, q̇, q̇_r, q̈_r)(π̂ − π)‖ = ‖M̃ q̈_r + C̃ q̇_r + g̃‖
(N·m), against ‖Y π‖, the model torque itself; for the adaptive loop its Lyapunov function
V = ½ sᵀ M s + ½ π̃ᵀ P⁻¹ π̃ (true M and π) and each body's mass estimate m̂ / m.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["compare", "plot", "prediction_error"]

LOOPS = ("true", "wrong", "adaptive")
FINAL = 2.0  # s: the last FINAL seconds are the "final" window
EVERY = 5  # the prediction error and V at every EVERY-th state


def _scenarios(scenario):
    return {
        "true": dataclasses.replace(scenario, controller="slotine_li", parameter_error=0.0),
        "wrong": dataclasses.replace(scenario, controller="slotine_li"),
        "adaptive": dataclasses.replace(scenario, controller="adaptive"),
    }


def prediction_error(dyn, scenario, plant_log, pi_hat, rows) -> tuple[np.ndarray, np.ndarray]:
    """‖Y (π̂ − π)‖ and ‖Y π‖ at the plant's states ``rows`` (Y = ``dyn.regressor`` at q, q̇,
    q̇_r, q̈_r of the scenario's reference; π = ``dyn``'s parameters); ``pi_hat`` one row per
    state of the log, or one vector for all."""
    pi = dyn.inertial_parameters()
    reference = scenario.reference(dyn)
    lam = scenario.lam
    t = (plant_log["stamp_ns"] - int(plant_log["stamp_ns"][0])) * 1e-9
    q, qd = plant_log["q"], plant_log["qd"]
    Y = np.zeros((dyn.nv, pi.size))
    err, scale = np.zeros(len(rows)), np.zeros(len(rows))
    for k, i in enumerate(rows):
        e = q[i] - reference.position(t[i])
        ed = qd[i] - reference.velocity(t[i])
        qd_r = reference.velocity(t[i]) - lam * e
        qdd_r = reference.acceleration(t[i]) - lam * ed
        dyn.regressor(q[i], qd[i], qd_r, qdd_r, out=Y)
        est = pi_hat if np.ndim(pi_hat) == 1 else pi_hat[i]
        err[k] = np.linalg.norm(Y @ (est - pi))
        scale[k] = np.linalg.norm(Y @ pi)
    return err, scale


def _estimates(dyn, scenario, ctrl_log) -> np.ndarray:
    """π̂ used for the torque at each state: the starting estimate, then the logged π̂ after the
    previous state's step."""
    start = scenario.controller_parameters(dyn)
    logged = ctrl_log["controller_pi"]
    return np.vstack([start[None, :], logged[:-1]])


def _window(t, x, lo, hi):
    sel = (t >= lo) & (t < hi)
    return x[sel]


def _settling_time(t, norm_e, bound) -> float | None:
    """The first time after which ‖e‖ stays below ``bound`` (None: never)."""
    above = np.nonzero(norm_e >= bound)[0]
    if not len(above):
        return 0.0
    if above[-1] == len(t) - 1:
        return None
    return float(t[above[-1] + 1])


def compare(scenario, duration: float, adaptive_logs=None, settle_bound: float = 5e-3) -> dict:
    """Run the three loops (module docstring) for ``duration`` s with
    :func:`~coriolis_ros.demo.passivity_analysis.simulate` (``adaptive_logs``: (plant log,
    controller log) of the adaptive loop run elsewhere, e.g. over ROS, used instead of its
    in-process run and compared with it); the summary (JSON-able) and the series for
    :func:`plot`.  ``settle_bound`` (rad) defines the settling time of ‖e‖."""
    from coriolis_ros.demo import passivity_analysis as analysis
    from coriolis_ros.demo.passivity_adaptive import AdaptiveSlotineLi

    runs = _scenarios(scenario)
    dyn = scenario.dynamics()
    pi = dyn.inertial_parameters()
    wrong_pi = scenario.controller_parameters(dyn)
    logs = {name: analysis.simulate(runs[name], duration) for name in ("true", "wrong")}
    in_process = analysis.simulate(runs["adaptive"], duration)
    logs["adaptive"] = in_process if adaptive_logs is None else adaptive_logs

    summary = {
        "robot": dyn.name,
        "duration_s": float(duration),
        "parameter_error": scenario.parameter_error,
        "parameter_seed": scenario.parameter_seed,
        "body_factors": dict(zip(dyn.parameter_links,
                                 scenario.parameter_factors(dyn).tolist())),  # fmt: skip
        "gains": {"lambda": scenario.lam, "kappa": scenario.kappa, "gamma": scenario.adapt_gain},
        "push": scenario.push_description(dyn) if scenario.push_start < duration else "none",
        "settle_bound_rad": settle_bound,
        "loops": {},
    }
    series = {}
    for name in LOOPS:
        plant_log, ctrl_log = logs[name]
        t = (plant_log["stamp_ns"] - int(plant_log["stamp_ns"][0])) * 1e-9
        if len(ctrl_log["e"]) != len(t):
            raise ValueError(f"the {name} loop's controller answered {len(ctrl_log['e'])} of "
                             f"{len(t)} states")  # fmt: skip
        norm_e = np.linalg.norm(ctrl_log["e"], axis=1)
        rows = np.arange(0, len(t), EVERY)
        estimate = {"true": pi, "wrong": wrong_pi}.get(name)
        if estimate is None:
            estimate = _estimates(dyn, scenario, ctrl_log)
        err, scale = prediction_error(dyn, scenario, plant_log, estimate, rows)
        end = float(t[-1])
        final_e = _window(t, norm_e, end - FINAL, end + 1.0)
        final_p = _window(t[rows], err, end - FINAL, end + 1.0)
        entry = {
            "final_window_s": [end - FINAL, end],
            "tracking_final_max_rad": float(final_e.max()),
            "tracking_final_rms_rad": float(np.sqrt((final_e**2).mean())),
            "tracking_max_rad": float(norm_e.max()),
            "settling_time_s": _settling_time(t, norm_e, settle_bound),
            "prediction_error_initial_Nm": float(err[0]),
            "prediction_error_final_max_Nm": float(final_p.max()),
            "prediction_error_final_rms_Nm": float(np.sqrt((final_p**2).mean())),
            "model_torque_final_rms_Nm": float(
                np.sqrt((_window(t[rows], scale, end - FINAL, end + 1.0) ** 2).mean())
            ),
        }
        s_series = {"t": t, "norm_e": norm_e, "t_p": t[rows], "prediction": err, "scale": scale}
        if name == "adaptive":
            # V = ½ sᵀ M s + ½ π̃ᵀ P⁻¹ π̃ with the controller's own P
            reference = AdaptiveSlotineLi(scenario.controller_model(dyn),
                                          scenario.reference(dyn), scenario)  # fmt: skip
            kinetic = analysis.storage(dyn, plant_log["q"][rows], ctrl_log["s"][rows])
            param = np.zeros(len(rows))
            for k, i in enumerate(rows):
                reference.adaptive.reset(estimate[i])
                param[k] = reference.adaptive.parameter_energy(pi)
            V = kinetic + param
            increase = np.diff(V).max() if len(V) > 1 else 0.0
            masses = estimate[:, ::10] / pi[::10]
            entry.update({
                "lyapunov_initial": float(V[0]),
                "lyapunov_final": float(V[-1]),
                "lyapunov_largest_increase": float(max(increase, 0.0)),
                "parameter_term_initial": float(param[0]),
                "parameter_term_final": float(param[-1]),
                "mass_ratio_final": dict(zip(dyn.parameter_links, masses[-1].tolist())),
            })  # fmt: skip
            s_series.update({"V": V, "param": param, "masses": masses})
            if adaptive_logs is not None:  # the same loop in this process
                other = in_process[0]["q"]
                same = plant_log["q"].shape == other.shape
                entry["ros_minus_in_process_max_abs_q_rad"] = (
                    float(np.abs(plant_log["q"] - other).max()) if same else None
                )
        summary["loops"][name] = entry
        series[name] = s_series
    summary["links"] = list(dyn.parameter_links)
    return {"summary": summary, "series": series}


def plot(result: dict, path: str) -> None:
    """Four panels: ‖e‖ of the three loops; ‖Y π̃‖ of the fixed-wrong and adaptive loops
    against ‖Y π‖; the adaptive loop's V and its parameter term; m̂ / m per body."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary, series = result["summary"], result["series"]
    fig, axes = plt.subplots(4, 1, figsize=(9, 12), sharex=True, constrained_layout=True)
    labels = {
        "true": "Slotine–Li, true parameters",
        "wrong": f"Slotine–Li, parameters {100 * summary['parameter_error']:g} % wrong (fixed)",
        "adaptive": f"adaptive, from the same wrong parameters (γ = {summary['gains']['gamma']:g})",
    }
    colors = {"true": "C2", "wrong": "C3", "adaptive": "C0"}
    for ax in axes:
        ax.grid(True, alpha=0.3)
    ax = axes[0]
    for name in LOOPS:
        s = series[name]
        ax.semilogy(s["t"], np.maximum(s["norm_e"], 1e-7), color=colors[name], lw=0.9,
                    label=labels[name])  # fmt: skip
    ax.set_ylabel("tracking error ‖e‖ (rad)")
    ax.set_ylim(1e-4, None)  # ‖e(0)‖ = 0: the loop starts on the reference, at rest
    push = "no push" if summary["push"] == "none" else f"push {summary['push']}"
    ax.set_title(f"{summary['robot']} in MuJoCo, {push}", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")

    ax = axes[1]
    s = series["adaptive"]
    ax.semilogy(s["t_p"], s["scale"], color="0.6", lw=0.9, label="‖Y π‖: the model torque")
    for name in ("wrong", "adaptive"):
        s = series[name]
        ax.semilogy(s["t_p"], np.maximum(s["prediction"], 1e-9), color=colors[name], lw=0.9,
                    label=f"‖Y (π̂ − π)‖, {name}")  # fmt: skip
    ax.set_ylabel("torque (N·m)")
    ax.set_title("what the parameters get wrong: Y(q, q̇, q̇_r, q̈_r)(π̂ − π)", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")

    ax = axes[2]
    s = series["adaptive"]
    ax.semilogy(s["t_p"], s["V"], color="C0", lw=1.2, label="V = ½ sᵀ M s + ½ π̃ᵀ P⁻¹ π̃")
    ax.semilogy(s["t_p"], s["param"], color="C1", lw=0.9, ls="--", label="½ π̃ᵀ P⁻¹ π̃")
    ax.set_ylabel("adaptive loop (J)")
    ax.legend(fontsize=7, loc="upper right")

    ax = axes[3]
    for b, link in enumerate(summary["links"]):
        ax.plot(s["t"], s["masses"][:, b], lw=0.9, label=link)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_ylabel("mass estimate m̂ / m")
    ax.set_xlabel("simulated time (s)")
    ax.legend(fontsize=7, ncol=4, loc="upper right")
    fig.savefig(path, dpi=110)
    plt.close(fig)
