"""Geared rotors and other constant joint couplings, from the URDF or from a datasheet.

**In the URDF**, the top-level element read by the MIT fork of urdfdom and by GRBDA::

    <coupling name="knee_rotor">
      <predecessor link="shank"/> <successor link="knee_rotor"/> <ratio value="9.0"/>
    </coupling>

couples the successor link's joint to the predecessor link's joint: the joint whose child
is ``successor`` turns ``ratio`` times as far as the joint whose child is ``predecessor``,
q_s = ratio q_p (so qdot_s = ratio qdot_p; ``ratio`` defaults to 1).  In the usual geared
motor, the rotor is a link of its own on a revolute or continuous joint hanging from the
driven link's parent, about the driven joint's axis, and is the successor; its joint is a
coupled joint: not a coordinate, it follows its leader.  Chains (a gear train: a rotor
driving a gear driving a link) are resolved to the independent joint, the ratios
multiplied.  The joint ``independent="false"`` attribute of urdfdom's fork says which of
the two joints follows: the successor's, unless the predecessor's is marked
``independent="false"`` (then q_p = q_s / ratio).  A joint without the attribute is
independent, as in the fork; both marked ``"false"`` is refused (neither would be the
coordinate).

More generally, as GRBDA reads it, a coupling joins the moving joints on the two paths from
the links' nearest common ancestor: ratio * (sum of the joints down to the predecessor) =
(sum down to the successor).  A rotor on the thigh that drives the ankle through a belt
along the shank, predecessor the foot, turns ratio * (q_knee + q_ankle): it follows a sum of
joints.  Such a follower makes A = dq/dqbar a matrix with several entries in a row, which the
coupled kernels (one leader per row) do not take: the model is computed on its tree with
that constant A as a closed chain without loops (:mod:`.closed_chain`).  Closed kinematic
chains (``<loop>``) are not constant couplings: see :mod:`.loops`.

**From a datasheet**, for the many URDFs without rotor links, ``rotors={joint: {...}}``
(:func:`add_rotors`) adds, for each driven joint, a rotor link ``<joint>_rotor`` on a
continuous joint ``<joint>_rotor`` with the driven joint's parent, origin and axis, so
the rotor's frame is the joint's frame at q = 0 and it spins about the joint's axis:

    gear_ratio  N, rotor turns per joint turn (per metre for a prismatic joint)
    inertia     [ixx, iyy, izz, ixy, ixz, iyz] about the rotor's centre of mass, in the
                joint's frame (kg m^2)
    mass        kg, default 0 (its centre is the joint's origin)

and couples it with ratio N.  The same entries in a YAML file (:func:`load_rotors`: the
mapping itself, or under a top-level ``rotors:`` key) serve the node (``rotors_file``) and
the command line (``--rotors FILE``).  Both roads give the same model: the tree with the rotor as a
body, and the rotor joint following its leader (Wensing & Slotine, Section VI-C: a cluster
of a link and its rotor, q_rotor = N q_link, a constant A = dq/dqbar).
"""

from __future__ import annotations

import itertools
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import yaml

from .errors import URDFError

ROTOR_SUFFIX = "_rotor"
# |ratio| bounds: beyond any gearbox, worm gear or screw (rad per rad or per metre); a ratio
# of 1e200 would make N^2 I overflow to inf in M.
MIN_RATIO, MAX_RATIO = 1e-6, 1e6
ROTOR_KEYS = ("gear_ratio", "inertia", "mass")
COUPLED_TYPES = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class Coupling:
    """q(successor's joint) = ratio * q(predecessor's joint), as the URDF element says."""

    name: str
    predecessor: str  # link
    successor: str  # link
    ratio: float


def _where(name: str | None, index: int) -> str:
    return f"/robot/coupling[@name='{name}']" if name else f"/robot/coupling[{index}]"


def read_couplings(root) -> list[Coupling]:
    """The ``<coupling>`` elements of a ``<robot>`` element tree; URDFError naming a bad one
    (``<loop>`` elements are read by :mod:`.loops`)."""
    out, names = [], set()
    for index, elem in enumerate(root.findall("coupling"), start=1):
        name = elem.get("name")
        where = _where(name, index)
        if not name:
            raise URDFError(f"{where}: a <coupling> has no name attribute")
        if name in names:
            raise URDFError(f"{where}: duplicate coupling name '{name}'")
        names.add(name)
        links = []
        for role in ("predecessor", "successor"):
            child = elem.find(role)
            link = None if child is None else child.get("link")
            if not link:
                raise URDFError(f"{where}: needs <{role} link=\"...\"/>")
            links.append(link)
        ratio_elem = elem.find("ratio")
        text = "1" if ratio_elem is None else ratio_elem.get("value")
        try:
            ratio = float(text)
        except (TypeError, ValueError):
            raise URDFError(f"{where}/ratio: value {text!r} is not a number") from None
        if not MIN_RATIO <= abs(ratio) <= MAX_RATIO:
            raise URDFError(
                f"{where}/ratio: the ratio must be finite and nonzero, between "
                f"{MIN_RATIO:g} and {MAX_RATIO:g} in magnitude, got {text}"
            )
        out.append(Coupling(name, links[0], links[1], ratio))
    return out


def _number(joint: str, key: str, value) -> float:
    if isinstance(value, bool):  # float() would take True as 1 (a string is parsed: YAML 1.1
        # reads 1e-6, without a decimal point, as the string '1e-6')
        raise ValueError(f"rotors: joint '{joint}': {key} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"rotors: joint '{joint}': {key} must be a number, got {value!r}"
        ) from None
    if not math.isfinite(x):
        raise ValueError(f"rotors: joint '{joint}': {key} must be finite, got {x!r}")
    return x


def check_rotor(joint: str, spec) -> tuple[float, list[float], float]:
    """(gear ratio, six inertia entries, mass) of one datasheet entry; ValueError naming the
    joint and the key otherwise."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"rotors: joint '{joint}': expected a mapping, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(ROTOR_KEYS))
    if unknown:
        raise ValueError(
            f"rotors: joint '{joint}': unknown key(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(ROTOR_KEYS)})"
        )
    for key in ("gear_ratio", "inertia"):
        if key not in spec:
            raise ValueError(f"rotors: joint '{joint}': '{key}' is missing")
    ratio = _number(joint, "gear_ratio", spec["gear_ratio"])
    if not MIN_RATIO <= abs(ratio) <= MAX_RATIO:
        raise ValueError(
            f"rotors: joint '{joint}': gear_ratio must be nonzero, between {MIN_RATIO:g} and "
            f"{MAX_RATIO:g} in magnitude, got {ratio!r}"
        )
    values = spec["inertia"]
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) != 6:
        raise ValueError(
            f"rotors: joint '{joint}': inertia must be six numbers [ixx, iyy, izz, ixy, ixz, iyz]"
        )
    inertia = [_number(joint, "inertia", v) for v in values]
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    matrix = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    eig = np.linalg.eigvalsh(matrix)
    if eig[0] < -1e-12 * max(1.0, abs(eig[-1])):
        raise ValueError(
            f"rotors: joint '{joint}': inertia is not positive semidefinite "
            f"(principal moments {np.array2string(eig, precision=6)})"
        )
    mass = _number(joint, "mass", spec.get("mass", 0.0))
    if mass < 0.0:
        raise ValueError(f"rotors: joint '{joint}': mass must be >= 0, got {mass!r}")
    return ratio, inertia, mass


def load_rotors(path) -> dict:
    """The datasheet rotors of a YAML file: ``{joint: {gear_ratio, inertia, mass}}``, alone or
    under a top-level ``rotors:`` key (entries are checked when the model is built).
    ValueError naming the file if it cannot be read or is not such a mapping."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ValueError(f"rotors file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"rotors file {path}: not valid YAML: {exc}") from None
    if isinstance(data, Mapping) and set(data) == {"rotors"}:
        data = data["rotors"]
    if not isinstance(data, Mapping) or not data:
        raise ValueError(
            f"rotors file {path}: expected a mapping of joint names to "
            "{gear_ratio, inertia, mass}"
        )
    if not all(isinstance(name, str) for name in data):
        raise ValueError(f"rotors file {path}: joint names must be strings")
    return dict(data)


def add_rotors(root, rotors: Mapping | None) -> list[Coupling]:
    """Add a rotor link and joint to the ``<robot>`` element tree for each datasheet entry;
    returns their couplings.  ValueError for an unknown or unsuitable joint, a bad entry or a
    name already taken."""
    if not rotors:
        return []
    if not isinstance(rotors, Mapping):
        raise ValueError(f"rotors must be a mapping of joint name to a rotor, got {type(rotors)}")
    joints = {j.get("name"): j for j in root.findall("joint")}
    link_names = {link.get("name") for link in root.findall("link")}
    out = []
    for name, spec in rotors.items():
        joint = joints.get(name)
        if joint is None:
            raise ValueError(f"rotors: unknown joint '{name}'")
        kind = joint.get("type")
        if kind not in COUPLED_TYPES:
            raise ValueError(
                f"rotors: joint '{name}' is {kind}; a rotor drives a revolute, continuous or "
                "prismatic joint"
            )
        ratio, inertia, mass = check_rotor(name, spec)
        rotor = name + ROTOR_SUFFIX
        if rotor in link_names or rotor in joints:
            raise ValueError(f"rotors: joint '{name}': the name '{rotor}' is taken already")
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None or not parent.get("link") or not child.get("link"):
            raise ValueError(f"rotors: joint '{name}' has no <parent link=...> or <child link=...>")
        link = ET.SubElement(root, "link", name=rotor)
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=repr(mass))
        keys = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
        ET.SubElement(inertial, "inertia", dict(zip(keys, map(repr, inertia))))  # six each
        elem = ET.SubElement(root, "joint", name=rotor, type="continuous")
        ET.SubElement(elem, "parent", link=parent.get("link"))
        ET.SubElement(elem, "child", link=rotor)
        for tag in ("origin", "axis"):
            found = joint.find(tag)
            if found is not None:
                ET.SubElement(elem, tag, dict(found.attrib))
        out.append(Coupling(rotor, child.get("link"), rotor, ratio))
    return out


def _moving_joint_below(link: str, stop: str, parent_joint: dict, joints: dict) -> list[str]:
    """The moving joints on the path from ``stop`` (an ancestor) down to ``link``."""
    path = []
    while link != stop:
        joint = joints[parent_joint[link]]
        if joint.type != "fixed":
            path.append(joint.name)
        link = joint.parent
    return path


def _ancestors(link: str, parent_joint: dict, joints: dict) -> list[str]:
    """``link`` and its ancestors up to the root; URDFError if the joints form a cycle."""
    out, seen = [link], {link}
    while out[-1] in parent_joint:
        up = joints[parent_joint[out[-1]]].parent
        if up in seen:
            raise URDFError(f"/robot: the joints form a cycle through link '{up}'")
        seen.add(up)
        out.append(up)
    return out


def resolve_couplings(
    couplings: list[Coupling], joints: dict, parent_joint: dict, independent: dict[str, bool]
) -> tuple[dict[str, tuple[str, float]], dict[str, tuple[tuple[str, float], ...]]]:
    """(coupled joint -> (independent leader, ratio), coupled joint -> ((leader, coefficient),
    ...)): the joints that follow one joint, and those that follow a sum of several, chains
    resolved.  URDFError naming the coupling for an unknown link, a link without a moving
    joint of its own below the two links' nearest common ancestor, a follower that cannot be
    told (:func:`_followers`), a joint coupled twice, or a cycle.

    A coupling says ratio * (sum of the moving joints from the nearest common ancestor down
    to the predecessor) = (the same sum down to the successor), solved for its follower."""
    direct: dict[str, dict[str, float]] = {}  # follower -> {joint: coefficient}
    found = []
    links = set(parent_joint) | {j.parent for j in joints.values()}
    for c in couplings:
        where = f"/robot/coupling[@name='{c.name}']"
        for role, link in (("predecessor", c.predecessor), ("successor", c.successor)):
            if link not in links:
                raise URDFError(f"{where}/{role}: refers to unknown link '{link}'")
        up_p = _ancestors(c.predecessor, parent_joint, joints)
        up_s = _ancestors(c.successor, parent_joint, joints)
        common = next((link for link in up_p if link in set(up_s)), None)
        if common is None:
            raise URDFError(
                f"{where}: links '{c.predecessor}' and '{c.successor}' are not connected"
            )
        path_p = _moving_joint_below(c.predecessor, common, parent_joint, joints)
        path_s = _moving_joint_below(c.successor, common, parent_joint, joints)
        for role, path in (("predecessor", path_p), ("successor", path_s)):
            if not path:
                raise URDFError(
                    f"{where}: the {role} hangs from the links' nearest common ancestor "
                    f"'{common}' by 0 moving joints: the coupling would hold nothing"
                )
        for joint in (*path_p, *path_s):
            if joints[joint].type not in COUPLED_TYPES:
                raise URDFError(
                    f"{where}: joint '{joint}' is {joints[joint].type}; couplings join "
                    "revolute, continuous or prismatic joints"
                )
        found.append((c, where, common, path_p, path_s))
    followers = _followers(found, independent)
    for (c, _, _, path_p, path_s), follower in zip(found, followers, strict=True):
        # ratio * sum(path_p) - sum(path_s) = 0, solved for the follower (one per coupling,
        # none twice: _followers)
        if follower in path_s:
            terms = {j: c.ratio for j in path_p}
            terms.update({j: -1.0 for j in path_s if j != follower})
        else:
            terms = {j: 1.0 / c.ratio for j in path_s}
            terms.update({j: -1.0 for j in path_p if j != follower})
        direct[follower] = terms
    single: dict[str, tuple[str, float]] = {}
    sums: dict[str, tuple[tuple[str, float], ...]] = {}
    for name in direct:
        terms = _substitute(name, direct, [name])
        if len(terms) == 1:
            single[name] = next(iter(terms.items()))
        else:
            sums[name] = tuple(terms.items())
    return single, sums


def _followers(found: list, independent) -> list[str]:
    """The joint that follows in each coupling (:func:`resolve_couplings`), one per coupling,
    none twice: a joint marked ``independent="false"`` among the coupling's joints, or the
    successor's joint when it hangs from the ancestor by one joint and is not marked.  Among
    the ways to choose, the one with the most marked joints; couplings that share no
    candidate are chosen for separately.  So in a gear train whose joints are all marked (as
    in GRBDA's files) the joint between two couplings follows in the one where it is the only
    candidate, and the result never depends on the order of the elements.  URDFError naming
    the coupling(s) when no way exists (a joint coupled twice), when two ways tie, or for a
    coupling with no candidate."""
    options = []  # per coupling: (joint, 1 if marked else 0)
    for _c, where, common, path_p, path_s in found:
        marked = [j for j in (*path_p, *path_s) if independent.get(j) is False]
        opts = [(j, 1) for j in marked]
        if len(path_s) == 1 and path_s[0] not in marked:
            opts.append((path_s[0], 0))
        if not opts:
            raise URDFError(
                f"{where}: the successor hangs from the links' nearest common ancestor "
                f"'{common}' by {len(path_s)} moving joints ({', '.join(map(repr, path_s))}) "
                'and none is marked independent="false": mark the joint that follows'
            )
        options.append(opts)
    out: list[str] = [""] * len(found)
    for group in _sharing(options):
        choice = _best_choice(found, options, group)
        for k, joint in zip(group, choice, strict=True):
            out[k] = joint
    return out


# Ways to choose the followers of couplings that share candidates, at most (a robot's
# transmissions give a few; beyond this the marking is what must say it)
MAX_CHOICES = 4096


def _sharing(options: list) -> list[list[int]]:
    """The couplings in groups linked by a shared candidate joint, each in element order."""
    group = list(range(len(options)))

    def root(k: int) -> int:
        while group[k] != k:
            k = group[k]
        return k

    owner: dict[str, int] = {}
    for k, opts in enumerate(options):
        for joint, _ in opts:
            if joint in owner:
                group[root(k)] = root(owner[joint])
            else:
                owner[joint] = k
    out: dict[int, list[int]] = {}
    for k in range(len(options)):
        out.setdefault(root(k), []).append(k)
    return list(out.values())


def _best_choice(found: list, options: list, group: list[int]) -> list[str]:
    """The followers of the couplings ``group`` (:func:`_followers`)."""
    names = ", ".join(f"'{found[k][0].name}'" for k in group)
    ways = math.prod(len(options[k]) for k in group)
    if ways > MAX_CHOICES:
        raise URDFError(
            f"couplings {names}: {ways} ways to choose the joints that follow; mark exactly "
            'those joints independent="false"'
        )
    best, ties = -1, []
    for combo in itertools.product(*(options[k] for k in group)):
        joints = [j for j, _ in combo]
        if len(set(joints)) < len(joints):
            continue
        score = sum(m for _, m in combo)
        if score > best:
            best, ties = score, [joints]
        elif score == best:
            ties.append(joints)
    if not ties:  # some joint would follow in two couplings: name the first such pair
        taken: dict[str, int] = {}
        for k in group:
            free = [j for j, _ in options[k] if j not in taken]
            if not free:
                joint = options[k][0][0]
                raise URDFError(
                    f"{found[k][1]}: joint '{joint}' is coupled twice (also by coupling "
                    f"'{found[taken[joint]][0].name}')"
                )
            taken[free[0]] = k
    if len(ties) > 1:
        if len(group) == 1:
            (k,) = group
            where, path_p, path_s = found[k][1], found[k][3], found[k][4]
            marked = [j for j, m in options[k] if m]
            if len(path_p) == len(path_s) == 1:
                raise URDFError(
                    f"{where}: both joints, '{path_p[0]}' and '{path_s[0]}', are marked "
                    'independent="false": one of the two must be the coordinate'
                )
            raise URDFError(
                f"{where}: the joints {', '.join(map(repr, marked))} are all marked "
                'independent="false"; a coupling makes one joint follow'
            )
        ways = "; ".join(", ".join(t) for t in ties[:3])
        raise URDFError(
            f"couplings {names}: the joints that follow can be chosen in more than one way "
            f"({ways}); mark exactly those joints independent=\"false\""
        )
    return ties[0]


def _substitute(name: str, direct: dict, path: list[str]) -> dict[str, float]:
    """The follower ``name``'s terms with every leader that follows in turn replaced by its
    own terms (a gear train: q_a = r1 q_b = r1 r2 q_c); URDFError for a cycle."""
    out: dict[str, float] = {}
    for leader, coef in direct[name].items():
        if leader in direct:
            if leader in path:
                cycle = " -> ".join(f"'{p}'" for p in [*path[path.index(leader) :], leader])
                raise URDFError(f"couplings form a cycle: {cycle}")
            inner = _substitute(leader, direct, [*path, leader])
        else:
            inner = {leader: 1.0}
        for joint, c2 in inner.items():
            out[joint] = out.get(joint, 0.0) + coef * c2
    return out


def independent_flags(root) -> dict[str, bool]:
    """The ``independent`` attribute of each joint that has one (urdfdom's fork: "true" and
    "True" are true, anything else false)."""
    out = {}
    for joint in root.findall("joint"):
        flag = joint.get("independent")
        if flag is not None:
            out[joint.get("name")] = flag in ("true", "True")
    return out
