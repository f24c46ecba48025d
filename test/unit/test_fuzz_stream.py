"""Fuzzing (Hypothesis): nothing crashes, nothing prints a traceback, nothing non-finite comes
out, whatever comes in.

* JointState messages (names from the model, its mimic joints, unknown and repeated names;
  arrays of any length; values including NaN, ±inf, ±1e300, subnormals; any stamp) into the
  node's ROS-free core (intake and tick as the node wires them) and into the bag reader's
  :class:`~coriolis_ros.offline.bag_rows.RowStream`: every published message and every row
  is finite, no tick fails.
* Mutated URDFs (a number replaced by NaN, inf, a huge, negative or tiny value or text; an
  element removed; a name changed) into ``Dynamics.from_urdf``: a ``URDFError`` (or
  ``ValueError``) with a message, or a model whose M, C, g are finite.

By default a short run (a few hundred examples, well under a minute). ``CORIOLIS_FUZZ=full``
runs the full budget: Hypothesis runs again until at least 10,000 messages have gone into each
front end (per model) and 500 mutated URDFs into the parser (several minutes).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.node_core_helpers import Core
from support.ros_helpers import panda_urdf

import coriolis_ros
from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.offline.bag_rows import RowStream

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FULL = os.environ.get("CORIOLIS_FUZZ", "") == "full"
# examples (each a burst of 1..8 messages, 4.5 on average) and mutated URDFs
MESSAGE_EXAMPLES = 2000 if FULL else 150
URDF_EXAMPLES = 500 if FULL else 40
FUZZ = settings(
    max_examples=MESSAGE_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ROBOTS = Path(coriolis_ros.__file__).parent / "robots"

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-4.0, 4.0),
    st.sampled_from([0.0, -0.0, 1e50, -1e50, 1.0000000000000002e50, 1e300, 5e-324, math.nan]),
    # the bounds of arm7_rotors' leaders (ratios 100 and 80) and the next doubles beyond
    st.sampled_from([1e48, -1.0000000000000002e48, 1.2500000000000001e48, -1.2500000000000003e48]),
)


def messages(names):
    """A burst of JointState-like messages (names, position, velocity, effort, stamp ns)."""
    pool = [*names, "unknown_joint", ""]
    name_lists = st.one_of(
        st.just(list(names)),  # the whole model, in order
        st.permutations(list(names)),
        st.lists(st.sampled_from(pool), max_size=len(names) + 3),  # any, repeats included
    )

    @st.composite
    def message(draw):
        msg_names = draw(name_lists)
        n = len(msg_names)
        size = draw(st.one_of(st.just(n), st.just(n), st.integers(0, n + 2)))
        pos = draw(st.lists(values, min_size=size, max_size=size))
        vel = draw(st.lists(values, max_size=n + 1)) if draw(st.booleans()) else [0.1] * n
        eff = draw(st.one_of(st.just([]), st.lists(values, min_size=n, max_size=n),
                             st.lists(values, max_size=n + 1)))  # fmt: skip
        now = 1_700_000_000 * 10**9
        stamp = draw(st.one_of(
            st.integers(0, 2**31 * 10**9), st.just(0), st.integers(now, now + 10**10)))
        return msg_names, pos, vel, eff, stamp

    return st.lists(message(), min_size=1, max_size=8)


def _all_finite(fields: dict) -> bool:
    return all(np.isfinite(np.asarray(v, dtype=float)).all() for v in fields.values())


@pytest.fixture(scope="module", params=["panda", "arm7_rotors"])
def core(request):
    urdf = panda_urdf() if request.param == "panda" else (ROBOTS / "arm7_rotors.urdf").read_text()
    core = Core(urdf, observer_enabled=True, publish_coriolis_matrix=True,
                publish_mass_matrix=True, publish_mass_matrix_derivative=True)  # fmt: skip
    assert core.model is not None, core.log.text()
    return core


@pytest.fixture(scope="module")
def node_names(core):
    return [*core.model.measured_names, *core.model.mimic]


def test_fuzzed_joint_states_into_the_node_core(core, node_names):
    published = core.published
    count = [0]

    @FUZZ
    @given(burst=messages(node_names))
    def run(burst):
        start = len(published)
        for names, pos, vel, eff, stamp in burst:
            core.joint_state(names, pos, vel, eff, stamp_ns=stamp)
            count[0] += 1
        for _, fields in published[start:]:
            assert _all_finite(fields), fields
        del published[:]
        text = core.log.text()
        assert "Traceback" not in text, text[-2000:]
        # a leader whose geared follower would be beyond ±1e50 is rejected with the message,
        # so no state reaches the library that it refuses: no tick fails
        failures = [t for _, t in core.log.lines if "tick failed" in t]
        assert failures == [], failures
        del core.log.lines[:]

    run()
    while FULL and count[0] < 10_000:  # the full budget, whatever the bursts' sizes
        run()


def test_fuzzed_joint_states_into_the_bag_reader(core, node_names):
    dyn = core.model.dyn
    stream = RowStream(dyn, None, (50.0, 0.1))
    rows = stream.rows
    count = [0]

    @FUZZ
    @given(burst=messages(node_names))
    def run(burst):
        for names, pos, vel, eff, stamp in burst:
            sec, nanosec = divmod(stamp, 10**9)
            log = 1_700_000_000 * 10**9 + count[0] * 1_000_000
            count[0] += 1
            stream.joint_state(sec, nanosec, names, np.asarray(pos, float),
                               np.asarray(vel, float), np.asarray(eff, float), log)  # fmt: skip
        for key in ("q", "qd"):
            assert all(np.isfinite(r).all() for r in rows[key])
        assert stream.observer_failed == 0  # no state the library refuses gets through
        assert all(r is None or np.isfinite(r).all() for r in rows["r"])
        for value in rows.values():
            del value[:]

    run()
    while FULL and count[0] < 10_000:  # the full budget, whatever the bursts' sizes
        run()


# ---------------------------------------------------------------- mutated URDFs

ARM = (ROBOTS / "arm7.urdf").read_text()
_TREE = ET.fromstring(ARM)
_ELEMENTS = list(_TREE.iter())
_NUMERIC = [
    (k, attr)
    for k, el in enumerate(_ELEMENTS)
    for attr, value in el.attrib.items()
    if attr not in ("name", "link", "type", "joint")
]
REPLACEMENTS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e200", "-1e200", "1e308", "-1", "0", "5e-324",
                     "1e-300", "", "x", "1 2", "1 2 3 4", "nan nan nan", "1e200 0 0"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.tuples(*[st.floats(-1e9, 1e9)] * 3).map(lambda t: " ".join(map(repr, t))),
)


@st.composite
def mutated_urdf(draw):
    root = ET.fromstring(ARM)
    elements = list(root.iter())
    kind = draw(st.sampled_from(["value", "value", "value", "remove", "rename"]))
    if kind == "value":
        k, attr = draw(st.sampled_from(_NUMERIC))
        elements[k].set(attr, draw(REPLACEMENTS))
    elif kind == "remove":
        parents = {child: parent for parent in elements for child in parent}
        k = draw(st.integers(1, len(elements) - 1))
        parents[elements[k]].remove(elements[k])
    else:
        named = [el for el in elements if "name" in el.attrib or "link" in el.attrib]
        el = draw(st.sampled_from(named))
        attr = "name" if "name" in el.attrib else "link"
        el.set(attr, draw(st.sampled_from(["", "base_link", "link3", "joint2", "ghost"])))
    return ET.tostring(root, encoding="unicode")


def test_fuzzed_urdfs_are_refused_with_a_message_or_give_finite_outputs():
    outcomes = {"refused": 0, "loaded": 0}
    rng = np.random.default_rng(0)

    @settings(max_examples=URDF_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
    @given(text=mutated_urdf())
    def run(text):
        try:
            dyn = Dynamics.from_urdf(text)
        except (URDFError, ValueError) as exc:
            assert str(exc).strip(), "refused without a message"
            outcomes["refused"] += 1
            return
        outcomes["loaded"] += 1
        for q in (dyn.neutral(), dyn.neutral() + rng.uniform(-1, 1, dyn.nq)):
            qd = rng.uniform(-1, 1, dyn.nv)
            M, Mdot, C = dyn.coriolis(q, qd)
            for value in (M, Mdot, C, dyn.gravity(q), *dyn.coriolis_vectors(q, qd)):
                assert np.isfinite(value).all()

    run()
    while FULL and outcomes["refused"] + outcomes["loaded"] < 500:
        run()
    assert outcomes["refused"] and outcomes["loaded"]  # both kinds were exercised
