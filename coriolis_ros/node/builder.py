"""The model builder: a robot description in, a warmed-up RobotModel swapped in (ROS-free).

One thread parses each new description (the latest request wins), warms the kernels up and
swaps the model in atomically; ticks keep running on the old model meanwhile. A description
that cannot be used is reported and the old model kept.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from coriolis_ros.dynamics.identities import singular_mass_matrix

from .contact import make_contact
from .observer_feed import ObserverFeed
from .robot_model import ModelError, RobotModel, description_problem, load_dynamics


def make_feed(model, params: dict, log):
    """The momentum observer of `model` when observer_enabled (None, with a log line, when it
    cannot run). Loads its kernels: call it off the tick path."""
    if not params["observer_enabled"]:
        return None
    try:
        feed = ObserverFeed(model.dyn, params["observer_gain"], float(params["observer_max_gap"]))
    except ValueError as exc:
        log.error(f"momentum observer not running: {exc}")
        return None
    gains = np.unique(feed.gain)
    gain = f"{gains[0]:g}" if len(gains) == 1 else "per joint " + ", ".join(
        f"{k:g}" for k in feed.gain
    )
    needs = "JointState.effort for every joint"
    if model.base is not None:
        needs += f" and odometry of '{model.dyn.root_link}'; the base's effort is taken as zero"
    log.info(
        f"momentum observer on {model.name}: K_O {gain} 1/s, max gap "
        f"{feed.max_gap:g} s (needs {needs})"
    )
    return feed


class ModelBuilder:
    """Builds models in its own thread (module docstring)."""

    def __init__(self, state, log, params: dict, gravity, make_output, odom_topic: str):
        self.state = state
        self.log = log
        self.p = params
        self.gravity = gravity
        self.make_output = make_output  # RobotModel -> its OutputMessage
        self.odom_topic = odom_topic
        self.on_swap = None  # called (without locks) after a model is swapped in
        self._cond = threading.Condition()
        self._request = None  # (urdf, source, dyn or None)
        self._building = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="coriolis-model", daemon=True)

    @property
    def building(self) -> bool:
        with self._cond:
            return self._building

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 0.5) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def request(self, urdf: str, source: str, dyn=None) -> None:
        """Build a model from `urdf` (text) in the builder thread; `dyn`: already loaded."""
        problem = description_problem(urdf)
        if problem is not None:
            if not urdf.strip():
                self.log.warning(f"ignoring empty robot_description from {source}")
            else:
                self.reject(source, problem)
            return
        with self._cond:
            self._request = (urdf, source, dyn)
            self._building = True
            self._cond.notify()

    def reject(self, source: str, reason: str) -> None:
        with self.state.lock:
            self.state.model_error = reason
            kept = self.state.model
        what = f"keeping model {kept.name}" if kept else "still no robot model"
        self.log.error(f"robot_description from {source} rejected ({what}): {reason}")

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                while self._request is None and not self._stop.is_set():
                    self._cond.wait(0.5)
                if self._stop.is_set():
                    return
                urdf, source, dyn = self._request
                self._request = None
            try:
                self.build(urdf, source, dyn)
            except Exception as exc:  # noqa: BLE001 -- the builder never dies; old model kept
                if self._stop.is_set():
                    return  # shutting down: the log may be gone
                self.reject(source, f"{type(exc).__name__}: {exc}")
            with self._cond:
                self._building = self._request is not None

    def build(self, urdf: str, source: str, dyn=None) -> None:
        """Load (unless `dyn` is given), warm up and swap in a model, in the calling thread."""
        current = self.state.model
        if current is not None and current.urdf == urdf:
            with self.state.lock:
                self.state.model_error = ""  # an earlier rejected description is superseded
            self.log.info(f"robot_description from {source} unchanged, model kept")
            return
        if dyn is None:
            try:
                dyn = load_dynamics(urdf, self.p, self.gravity)
            except ModelError as exc:
                self.reject(source, str(exc))
                return
        if self._stop.is_set():
            return
        service_dyn = dyn.clone()  # own workspace: services never touch the tick's instance
        start = time.perf_counter()
        dyn.warmup()
        service_dyn.warmup()
        service_dyn.warmup_frames()  # get_task_space's kernels: its first call must not compile
        model = RobotModel(
            dyn,
            service_dyn,
            urdf,
            float(self.p["base_state_timeout"]),
            float(self.p["mimic_tolerance"]),
        )
        model.output = self.make_output(model)
        model.out.q[:] = dyn.neutral()  # a valid configuration (unit quaternion) to warm up on
        model.out.compute(model.dyn)  # one real tick on the new buffers, off the tick path
        model.feed = make_feed(model, self.p, self.log)
        model.contact = make_contact(model, self.p, self.log)
        model.warning = singular_mass_matrix(dyn)
        warmup = time.perf_counter() - start
        if self._stop.is_set():
            return
        with self.state.lock:
            old = self.state.model
            if old is not None:
                model.buffer.seed_from(old.buffer)  # shared joints keep their values
                if model.base is not None and old.base is not None:
                    model.base.seed_from(old.base)
            self.state.model = model
            self.state.model_error = ""
            self.state.residual = math.nan
        if self.on_swap is not None:
            self.on_swap()
        if old is not None:
            self.log.info(
                f"robot model replaced: {old.name} ({old.n} DoF) -> {model.name} "
                f"({model.n} DoF) from {source}"
            )
        self.log.info(
            f"ready: {model.name}, {model.n} DoF, warm-up {warmup:.2f} s (from {source}); "
            f"{model.summary(self.odom_topic)}"
        )
        if model.warning:
            self.log.warning(f"{model.name}: {model.warning}")
