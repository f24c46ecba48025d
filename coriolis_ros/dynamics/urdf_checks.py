"""URDF hygiene checks that run before and during model building (ROS-free).

* :func:`reject_xacro` -- a xacro file (not yet expanded by ``xacro``) is rejected with
  "this is xacro: run `xacro` first", naming the element that gives it away, instead of
  failing later on "no <link>" or on a float that reads ``${...}``.
* :func:`check_numbers` -- every number the dynamics read (origins, axes, masses, inertias,
  limits, mimic factors) is parsed here first, so a malformed one is reported with its element
  path rather than as a bare float-parse error.
* magnitudes -- every such number must also be finite and within the bound of its kind
  (:data:`BOUNDS`): lengths, angles, masses, inertias, mimic factors; a value beyond it is
  an error naming the element, so that nothing the model is built from can overflow.
* :func:`warn_if_not_rigid_body` -- an inertia whose principal moments break the triangle
  inequality (I1 + I2 >= I3 for every ordering) belongs to no rigid body; it is used as
  written, with one :class:`URDFInertiaWarning` naming the link.
* :func:`element_path` -- the XPath-like location a URDF error about an element starts with
  (malformed XML gives its line and column instead), e.g.
  ``/robot/link[@name='forearm']/inertial/mass``.

Raised errors are ``URDFError`` (a ``ValueError``), imported lazily from
:mod:`coriolis_ros.dynamics.urdf_model` to keep this module free of import cycles.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np

from .errors import URDFError

__all__ = [
    "URDFInertiaWarning",
    "XACRO_DECLARED_HINT",
    "XACRO_HINT",
    "BOUNDS",
    "check_magnitude",
    "check_numbers",
    "declares_xacro",
    "element_path",
    "joint_path",
    "link_path",
    "parser_error_message",
    "reject_xacro",
    "warn_if_not_rigid_body",
]

XACRO_HINT = "this is xacro: run `xacro` first"
# Appended to other errors of a file that declares xmlns:xacro without other xacro evidence.
XACRO_DECLARED_HINT = " (the file declares xmlns:xacro: if it is xacro, run `xacro` first)"

# ${expression} and $(find pkg) / $(arg name) / ... substitutions that xacro expands.
_SUBSTITUTION = re.compile(r"\$\{|\$\((find|arg|env|optenv|eval|dirname|anon|cwd)\b")
# A prefixed start tag <xacro:...> anywhere in the text (used only when the XML does not parse).
_XACRO_TAG = re.compile(r"<\s*xacro:[A-Za-z_]")
_XMLNS_XACRO = re.compile(r"\bxmlns:xacro\s*=")

# Attributes parsed as numbers by model building (element tag -> attributes).
_NUMERIC = {
    "origin": ("xyz", "rpy"),
    "axis": ("xyz",),
    "mass": ("value",),
    "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
    "limit": ("lower", "upper", "effort", "velocity"),
    "mimic": ("multiplier", "offset"),
}
# Attributes without which the element means nothing (urdf_parser_py requires them too).
_REQUIRED = {
    "mass": ("value",),
    "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
    "parent": ("link",),
    "child": ("link",),
}
_VECTOR_LENGTH = {("origin", "xyz"): 3, ("origin", "rpy"): 3, ("axis", "xyz"): 3}

# Magnitude bounds (SI units) on the numbers model building reads.  Each is far beyond any
# machine yet keeps every product the kernels form finite: a body's inertia about a point
# is at most MAX_MASS * MAX_LENGTH^2 = MAX_INERTIA, a thousand such bodies sum to 1e24, and
# the kernels square lengths and velocities (docs/invariance.md, "Finite or refused").
MAX_LENGTH = 1e6  # m: a joint origin or a centre of mass 1000 km away
MAX_ANGLE = 1e6  # rad: beyond it a double carries less than 1e-10 rad of the angle
MAX_MASS = 1e9  # kg: a million tonnes (the heaviest machines weigh ~1e7 kg)
MAX_INERTIA = MAX_MASS * MAX_LENGTH**2  # kg m^2
MAX_MULTIPLIER = 1e6  # a mimic multiplier (rad/rad, m/m or m/rad), as a <coupling> ratio
MAX_LIMIT = float(np.finfo(np.float64).max)  # <limit>s are read by no computation: finite
# (element tag, attribute) -> (bound on |value|, what the value is)
BOUNDS = {
    ("origin", "xyz"): (MAX_LENGTH, "m"),
    ("origin", "rpy"): (MAX_ANGLE, "rad"),
    ("axis", "xyz"): (MAX_LENGTH, ""),
    ("mass", "value"): (MAX_MASS, "kg"),
    **{("inertia", key): (MAX_INERTIA, "kg m^2") for key in _NUMERIC["inertia"]},
    **{("limit", key): (MAX_LIMIT, "") for key in _NUMERIC["limit"]},
    ("mimic", "multiplier"): (MAX_MULTIPLIER, ""),
    ("mimic", "offset"): (MAX_LENGTH, "rad or m"),
}

# Tolerance of the triangle-inequality test: URDF inertias are often printed with 6 significant
# digits, thin rods and plates sit exactly on the boundary, and some files give round-off
# tensors (principal moments ~1e-20 kg m^2) for bodies meant to be point masses.
TRIANGLE_RTOL = 1e-6
TRIANGLE_ATOL = 1e-12  # kg m^2


class URDFInertiaWarning(UserWarning):
    """A link's inertia is not that of any rigid body (used as written all the same)."""


def _error(message: str) -> URDFError:
    return URDFError(message)


# ----------------------------------------------------------------------------- paths


def element_path(*steps: str) -> str:
    """``element_path("robot", "link[@name='a']")`` -> ``/robot/link[@name='a']``."""
    return "/" + "/".join(steps)


_PARSER_PATH = re.compile(r"^ParseError in (/\S+?):\s*(.*)$")


def parser_error_message(exc: BaseException) -> str:
    """urdf_parser_py's error as ``<element path>: invalid URDF: <reason>``.

    Its ParseErrors read ``ParseError in /robot[@name='r']/joint[@name='j']: reason``; other
    exceptions carry no location and are reported against ``/robot``.
    """
    reason = " ".join(str(exc).split()) or type(exc).__name__
    match = _PARSER_PATH.match(reason)
    if match is None:
        return f"/robot: invalid URDF: {reason}"
    path = re.sub(r"^/robot\[@name='[^']*'\]", "/robot", match.group(1))
    return f"{path}: invalid URDF: {match.group(2)}"


def _named(tag: str, name) -> str:
    return f"{tag}[@name='{name}']"


def link_path(name: str, *sub: str) -> str:
    return element_path("robot", _named("link", name), *sub)


def joint_path(name: str, *sub: str) -> str:
    return element_path("robot", _named("joint", name), *sub)


def _local(tag) -> str:
    """Tag without its namespace; 'xacro:name' for tags in a xacro namespace."""
    if not isinstance(tag, str):
        return "?"
    if tag.startswith("{"):
        uri, _, local = tag[1:].partition("}")
        return f"xacro:{local}" if "xacro" in uri else local
    return tag


def _step(elem, index: int | None = None) -> str:
    tag = _local(elem.tag)
    name = elem.get("name")
    if name is not None:
        return _named(tag, name)
    return f"{tag}[{index}]" if index is not None else tag


def _walk(elem, path: str):
    """Yield (element, path) for ``elem`` and every descendant, depth first."""
    yield elem, path
    children = [c for c in elem if isinstance(c.tag, str)]  # no comments, PIs
    totals: dict[str, int] = {}
    for child in children:
        totals[_local(child.tag)] = totals.get(_local(child.tag), 0) + 1
    seen: dict[str, int] = {}
    for child in children:
        tag = _local(child.tag)
        seen[tag] = seen.get(tag, 0) + 1
        index = seen[tag] if totals[tag] > 1 and child.get("name") is None else None
        yield from _walk(child, f"{path}/{_step(child, index)}")


# ----------------------------------------------------------------------------- xacro


def declares_xacro(xml: str) -> bool:
    """True when the text declares the xacro namespace (xacro's own output may keep it)."""
    return bool(_XMLNS_XACRO.search(xml))


def reject_xacro(root, xml: str | None = None) -> None:
    """Raise ``URDFError(XACRO_HINT ...)`` when ``root`` (or the text) is unexpanded xacro.

    Evidence: an element in the xacro namespace (``<xacro:macro>``, ``<xacro:include>``, ...),
    or a ``${...}`` / ``$(find ...)``-style substitution in an attribute anywhere in the
    document or in the text of the elements the dynamics read: ``xacro`` expands all of them.
    (Text elsewhere, e.g. in a ``<gazebo>`` plugin, is left alone: xacro's ``$${`` escape
    legitimately leaves a literal ``${`` there.)  Comments do not count (expanded
    URDFs often keep commented-out xacro), and neither does a bare ``xmlns:xacro`` declaration,
    which ``xacro`` leaves in many expanded files (see :data:`XACRO_DECLARED_HINT`).
    With ``root=None``, ``xml`` is text that did not parse: a ``<xacro:`` tag in it is the
    evidence (the prefix is unbound when the namespace is not declared).
    """
    if root is None:
        if xml is not None and _XACRO_TAG.search(_strip_comments(xml)):
            raise _error(f"{XACRO_HINT} (the text has <xacro:...> elements)")
        return
    top = "/" + _local(root.tag)
    for elem, path in _walk(root, top):
        if _local(elem.tag).startswith("xacro:"):
            raise _error(f"{XACRO_HINT} ({path} is a xacro element)")
        for key, value in elem.attrib.items():
            if _SUBSTITUTION.search(value):
                raise _error(f"{XACRO_HINT} ({path}[@{key}] is {value!r})")
    for elem, path in _dynamics_elements(root, top):
        if elem.text and _SUBSTITUTION.search(elem.text):
            raise _error(f"{XACRO_HINT} ({path} contains {elem.text.strip()!r})")


def _strip_comments(xml: str) -> str:
    return re.sub(r"<!--.*?-->", "", xml, flags=re.DOTALL)


_DYNAMICS_CHILDREN = {
    "link": ("inertial",),
    "inertial": ("origin", "mass", "inertia"),
    "joint": ("origin", "axis", "parent", "child", "limit", "mimic"),
}


def _dynamics_elements(root, path: str):
    """(element, path) of <robot> and the <link>/<joint> subtrees model building reads."""
    yield root, path

    def below(elem, elem_path):
        for child in elem:
            tag = _local(child.tag)
            if tag in _DYNAMICS_CHILDREN.get(_local(elem.tag), ()):
                child_path = f"{elem_path}/{_step(child)}"
                yield child, child_path
                yield from below(child, child_path)

    for elem in root:
        tag = _local(elem.tag)
        if tag in ("link", "joint"):
            elem_path = f"{path}/{_step(elem)}"
            yield elem, elem_path
            yield from below(elem, elem_path)


# ----------------------------------------------------------------------------- numbers


def check_numbers(root) -> None:
    """Raise ``URDFError`` naming the element path of the first malformed number model building
    reads (a vector with the wrong count, a value that is not a float, not finite or beyond its
    bound in :data:`BOUNDS`) or of a missing required attribute (mass value, inertia
    components, parent/child link)."""
    for elem, path in _dynamics_elements(root, "/" + _local(root.tag)):
        tag = _local(elem.tag)
        for key in _REQUIRED.get(tag, ()):
            if elem.get(key) is None:
                raise _error(f"{path}: required attribute '{key}' is missing")
        for key in _NUMERIC.get(tag, ()):
            text = elem.get(key)
            if text is None:
                continue
            parts = text.split()
            try:
                values = [float(p) for p in parts]
            except ValueError:
                raise _error(f"{path}[@{key}]: not a number: {text!r}") from None
            expected = _VECTOR_LENGTH.get((tag, key), 1)
            if len(parts) != expected:
                raise _error(
                    f"{path}[@{key}]: expected {expected} number{'s' * (expected != 1)}, "
                    f"got {len(parts)}: {text!r}"
                )
            check_magnitude(path, key, values, *BOUNDS.get((tag, key), (MAX_LIMIT, "")))


def check_magnitude(where: str, key: str, values, bound: float, unit: str = "") -> None:
    """``URDFError`` naming the element ``where`` and its attribute ``key`` unless every value
    is finite and |value| <= bound."""
    for x in values:
        if not math.isfinite(x):
            raise _error(f"{where}: {key}={x!r} is not finite")
        if abs(x) > bound:
            unit = f" {unit}" if unit else ""
            raise _error(
                f"{where}: {key}={x!r} is beyond the bound ±{bound:g}{unit} (a value this "
                "large belongs to no robot and would overflow the dynamics)"
            )


# ----------------------------------------------------------------------------- inertia


def triangle_violation(principal_moments) -> float:
    """How far (in inertia units) the moments break I1 + I2 >= I3; 0 when they don't.

    For any rigid body I_x = ∫(y² + z²) dm etc., so each principal moment is at most the sum
    of the other two; the largest minus the sum of the two others is the violation.
    """
    m = np.sort(np.asarray(principal_moments, dtype=float))
    return max(0.0, float(m[2] - m[0] - m[1]))


def warn_if_not_rigid_body(where: str, principal_moments) -> bool:
    """Warn (:class:`URDFInertiaWarning`) once per call when the moments break the triangle
    inequality beyond round-off; returns whether it warned.  The inertia is still used."""
    moments = np.sort(np.asarray(principal_moments, dtype=float))
    excess = triangle_violation(moments)
    if excess <= TRIANGLE_RTOL * abs(moments[2]) + TRIANGLE_ATOL:
        return False
    warnings.warn(
        f"{where}: inertia with principal moments {np.array2string(moments, precision=6)} "
        f"breaks the triangle inequality (largest exceeds the sum of the other two by "
        f"{excess:.3g}): no rigid body has it; used as written",
        URDFInertiaWarning,
        stacklevel=2,
    )
    return True
