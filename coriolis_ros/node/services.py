"""The node's services, answered from the current model (ROS-free: the request and response
objects are the node's, filled here by attribute).

Every answer is checked before it leaves: a failure is ``success=false`` with the reason in
``message``, never an exception and never a non-finite number (those are refused, counted and
reported in the diagnostics).
"""

from __future__ import annotations

import numpy as np

from coriolis_ros.stream.base_state import request_base
from coriolis_ros.stream.joint_state_buffer import MAX_ABS, name_list, resolve_request

from .conversions import to_field

NO_MODEL = "no robot model yet (waiting for robot_description)"
# A fixed-base model (root_joint fixed) takes no base state: base fields must stay empty.
FIXED_BASE_REQUEST = (
    "base_position/base_velocity given, but the model has a fixed base (root_joint: fixed)"
)


def nonfinite_fields(fields: dict) -> list[str]:
    """The names of the arrays in `fields` that hold NaN or an infinity."""
    return [name for name, value in fields.items() if not np.isfinite(value).all()]


def reference_problem(request, n: int):
    """(qd_r, qdd_r) of a ComputeDynamics request, () when both are empty, or the reason they
    cannot be used."""
    qd_r = np.asarray(request.reference_velocity, dtype=np.float64)
    qdd_r = np.asarray(request.reference_acceleration, dtype=np.float64)
    if not len(qd_r) and not len(qdd_r):
        return ()
    for label, values in (("reference_velocity", qd_r), ("reference_acceleration", qdd_r)):
        if len(values) != n:
            return (
                f"request: {label} has {len(values)} values, the model has {n} DoF (give both "
                "reference fields in the response's joint_names order, or neither)"
            )
        if not (np.abs(values) <= MAX_ABS).all():
            return f"request: {label} has NaN, infinite or values beyond ±{MAX_ABS:g}"
    return qd_r, qdd_r


class Services:
    """Answers of get_christoffel_symbols, compute_dynamics and reset_observer."""

    def __init__(self, state, log, params: dict, now_stamp):
        self.state = state
        self.log = log
        self.p = params
        self.now_stamp = now_stamp  # () -> the node's clock as a stamp message

    def _answer(self, response, body, plain: bool = False):
        """Run ``body(model)`` to fill ``response``: success=false with the reason when there
        is no model or it raises (``plain``: a ValueError's message as it is, e.g. an unknown
        frame), never an exception out of a service."""
        response.success = False
        try:
            model = self.state.model
            if model is None:
                response.message = NO_MODEL
                return response
            body(model)
        except ValueError as exc:
            response.success = False
            response.message = str(exc) if plain else f"failed: ValueError: {exc}"
        except Exception as exc:  # noqa: BLE001 -- a service never raises
            response.success = False
            response.message = f"failed: {type(exc).__name__}: {exc}"
        return response

    def _refuse_nonfinite(self, response, model, fields: dict) -> bool:
        bad = nonfinite_fields(fields)
        if not bad:
            return False
        reason = (
            f"{', '.join(bad)} not finite for this request (model {model.name}: values "
            "overflow there)"
        )
        self.state.record_nonfinite(reason)
        self.log.error(f"service answer refused: {reason}")
        response.success = False
        response.message = f"refused: {reason}"
        return True

    def christoffel(self, request, response):
        return self._answer(response, lambda model: self._christoffel(request, model, response))

    def _christoffel(self, request, model, response) -> None:
        if model.base is None and len(request.base_position):
            response.message = FIXED_BASE_REQUEST
            return
        if not len(request.joint_names) and not len(request.position):
            with self.state.lock:
                buffer = model.buffer
                missing = buffer.missing() if not buffer.complete else ()
                q = buffer.position.copy()
                stamp = buffer.stamp
            if missing:
                response.message = f"no complete joint state yet: missing {name_list(missing)}"
                return
            response.header.stamp = stamp
        else:
            q, _, reason = resolve_request(
                model.measured_names, request.joint_names, request.position, what="request",
                followers=(*model.mimic, *model.dependent),
            )  # fmt: skip
            if q is None:
                response.message = reason
                return
            response.header.stamp = self.now_stamp()
        if model.base is not None:
            with self.state.lock:
                base = request_base(model.root_joint, request.base_position, (), False, model.base)
            if isinstance(base, str):
                response.message = base
                return
            q = np.concatenate((base[0], q))
        with model.service_lock:
            gamma = model.service_dyn.christoffel(q)
        if self._refuse_nonfinite(response, model, {"symbols": gamma, "position": q}):
            return
        response.joint_names = list(model.joint_names)
        response.position_names = list(model.position_names)
        response.position = to_field(q)
        response.symbols = to_field(gamma)
        response.success = True
        response.message = f"{model.name}: {model.n}^3 Christoffel symbols"

    def _request_state(self, request, model, response):
        """(q, qd) of a request carrying a state (ComputeDynamics, GetTaskSpace), or None with
        the reason in response.message."""
        if model.base is None and (len(request.base_position) or len(request.base_velocity)):
            response.message = FIXED_BASE_REQUEST
            return None
        q, qd, reason = resolve_request(
            model.measured_names,
            request.joint_names,
            request.position,
            request.velocity,
            what="request",
            followers=(*model.mimic, *model.dependent),
        )
        if q is None:
            response.message = reason
            return None
        if model.base is not None:
            # joint velocities given: the base's are needed too; none: all zero
            moving = len(request.velocity) > 0
            with self.state.lock:
                base = request_base(
                    model.root_joint, request.base_position, request.base_velocity,
                    moving, model.base,
                )  # fmt: skip
            if isinstance(base, str):
                response.message = base
                return None
            q = np.concatenate((base[0], q))
            qd = np.concatenate((base[1] if moving else np.zeros_like(base[1]), qd))
            qd = model.service_dyn.velocity_from_body(q, qd)  # the base twist is in its frame
        return q, qd

    def dynamics(self, request, response):
        return self._answer(response, lambda model: self._dynamics(request, model, response))

    def _dynamics(self, request, model, response) -> None:
        state = self._request_state(request, model, response)
        if state is None:
            return
        q, qd = state
        reference = reference_problem(request, model.n)
        if isinstance(reference, str):
            response.message = reference
            return
        dyn = model.service_dyn
        with model.service_lock:
            fields = {}
            if reference:
                fields["slotine_li_torque"] = dyn.slotine_li(q, qd, *reference)
            M, Mdot, C = dyn.coriolis(q, qd)
            Cqd, CTqd, p = dyn.coriolis_vectors(q, qd)
            fields.update(
                coriolis_matrix=C,
                mass_matrix=M,
                mass_matrix_derivative=Mdot,
                coriolis_force=Cqd,
                coriolis_transpose_force=CTqd,
                gravity_force=dyn.gravity(q),
                momentum=p,
                position=q,
                velocity=qd,
            )
        if self._refuse_nonfinite(response, model, fields):
            return
        for field_name, value in fields.items():
            setattr(response, field_name, to_field(value))
        response.joint_names = list(model.joint_names)
        response.position_names = list(model.position_names)
        response.success = True
        response.message = f"{model.name}: {model.n} DoF"

    def task_space(self, request, response):
        return self._answer(
            response, lambda model: self._task_space(request, model, response), plain=True
        )

    def _task_space(self, request, model, response) -> None:
        state = self._request_state(request, model, response)
        if state is None:
            return
        q, qd = state
        rows = [int(r) for r in request.rows] or None
        reference = request.reference or "local_world_aligned"
        dyn = model.service_dyn
        with model.service_lock:
            Lam, mu, J, Jd = dyn.task_space(
                q, qd, request.frame, reference, rows, float(request.damping)
            )
        fields = {"task_inertia": Lam, "task_coriolis": mu, "jacobian": J, "jacobian_dot": Jd}
        if self._refuse_nonfinite(response, model, fields):
            return
        for field_name, value in fields.items():
            setattr(response, field_name, to_field(value))
        response.joint_names = list(model.joint_names)
        response.rows = list(range(6)) if rows is None else rows
        response.success = True
        response.message = (
            f"{model.name}: frame {request.frame}, {len(response.rows)} task rows, {reference}"
        )

    def reset_observer(self, request, response):
        with self.state.lock:
            model = self.state.model
            feed = model.feed if model is not None else None
            if feed is not None:
                feed.reset()
        response.success = feed is not None
        if feed is not None:
            response.message = "momentum observer reset: the next joint state starts it from zero"
            self.log.info("momentum observer reset (service reset_observer)")
        elif model is None:
            response.message = NO_MODEL
        elif not self.p["observer_enabled"]:
            response.message = "the momentum observer is off (parameter observer_enabled)"
        else:
            response.message = "the momentum observer is not running (see the node's log)"
        return response
