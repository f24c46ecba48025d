"""Joints that follow others or are welded: mimic joints resolved to their independent
leaders, and locked joints (``locked_joints=``) checked and resolved to fixed poses."""

from __future__ import annotations

import math
from collections.abc import Mapping

from . import urdf_checks
from .errors import URDFError

# A locked mimic joint must sit where its leader's lock puts it, to this tolerance.
LOCK_TOLERANCE = 1e-9


def check_locked_argument(locked_joints) -> dict[str, float]:
    """{name: finite position}; ValueError naming the joint otherwise."""
    if locked_joints is None:
        return {}
    if not isinstance(locked_joints, Mapping):
        raise ValueError(
            "locked_joints must be a mapping of joint name to position, "
            f"got {type(locked_joints).__name__}"
        )
    out = {}
    for name, value in locked_joints.items():
        if not isinstance(name, str):
            raise ValueError(f"locked_joints: joint names must be strings, got {name!r}")
        try:
            position = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"locked_joints: the position of joint '{name}' must be a number, got {value!r}"
            ) from None
        if not math.isfinite(position):
            raise ValueError(f"locked_joints: the position of joint '{name}' is not finite")
        if abs(position) > urdf_checks.MAX_LENGTH:
            raise ValueError(
                f"locked_joints: the position of joint '{name}' is beyond the bound "
                f"±{urdf_checks.MAX_LENGTH:g} (rad or m), got {position!r}"
            )
        out[name] = position
    return out


def mimic_tag(joint) -> tuple[str, float, float]:
    """(leader, multiplier, offset) of a <mimic> tag, defaults 1 and 0 (both finite and within
    their bounds: :mod:`.urdf_checks` has refused any other when the URDF was read)."""
    tag = joint.mimic
    multiplier = 1.0 if tag.multiplier is None else float(tag.multiplier)
    offset = 0.0 if tag.offset is None else float(tag.offset)
    return tag.joint, multiplier, offset


def resolve_mimics(joints: dict) -> dict[str, tuple[str, float, float]]:
    """Mimic joint -> (independent leader, multiplier, offset), chains resolved.

    A <mimic> on a fixed joint is ignored (nothing moves: Talos' URDFs carry such
    tags); a leader that is unknown, fixed, floating or planar, a floating or
    planar mimic joint and a cycle are URDFErrors naming the joints.
    """
    direct = {}
    for joint in joints.values():
        if joint.mimic is None or joint.type == "fixed":
            continue
        leader, multiplier, offset = mimic_tag(joint)
        if joint.type in ("floating", "planar"):
            raise URDFError(
                f"joint '{joint.name}' is {joint.type} and has a <mimic>: only revolute, "
                "continuous and prismatic joints can mimic"
            )
        if leader not in joints:
            raise URDFError(f"joint '{joint.name}' mimics unknown joint '{leader}'")
        kind = joints[leader].type
        if kind == "fixed":
            raise URDFError(f"joint '{joint.name}' mimics fixed joint '{leader}'")
        if kind in ("floating", "planar"):
            raise URDFError(
                f"joint '{joint.name}' mimics {kind} joint '{leader}': only revolute, "
                "continuous and prismatic joints can be mimicked"
            )
        direct[joint.name] = (leader, multiplier, offset)
    resolved = {}
    for name in direct:
        path = [name]
        leader, multiplier, offset = direct[name]
        while leader in direct:  # q_a = m1 (m2 q_c + o2) + o1
            if leader in path:
                cycle = " -> ".join(f"'{p}'" for p in [*path[path.index(leader) :], leader])
                raise URDFError(f"mimic joints form a cycle: {cycle}")
            path.append(leader)
            nxt, m2, o2 = direct[leader]
            multiplier, offset = multiplier * m2, multiplier * o2 + offset
            leader = nxt
        resolved[name] = (leader, multiplier, offset)
    return resolved


def followers(
    mimics: dict[str, tuple[str, float, float]], coupled: dict[str, tuple[str, float]]
) -> dict[str, tuple[str, float, float]]:
    """Every joint that follows another (mimic joints and coupled joints) -> (independent
    leader, multiplier, offset), through each other's chains; URDFError for a joint that is
    both, or a leader that is a follower of the other kind in a cycle."""
    both = sorted(set(mimics) & set(coupled))
    if both:
        raise URDFError(f"joint '{both[0]}' has a <mimic> and is coupled by a <coupling>")
    direct = dict(mimics)
    direct.update({name: (leader, ratio, 0.0) for name, (leader, ratio) in coupled.items()})
    out = {}
    for name, (leader, multiplier, offset) in direct.items():
        seen = {name}
        while leader in direct:  # q = m1 (m2 q_c + o2) + o1
            if leader in seen:
                raise URDFError(f"mimic joints and couplings form a cycle through '{leader}'")
            seen.add(leader)
            nxt, m2, o2 = direct[leader]
            multiplier, offset, leader = multiplier * m2, multiplier * o2 + offset, nxt
        check_resolved(name, leader, multiplier, offset)
        out[name] = (leader, multiplier, offset)
    return out


def check_resolved(name: str, leader: str, multiplier: float, offset: float) -> None:
    """A joint that follows another through a chain moves within the bounds of one tag."""
    bound = urdf_checks.MAX_MULTIPLIER
    if not abs(multiplier) <= bound or not abs(offset) <= urdf_checks.MAX_LENGTH:
        raise URDFError(
            f"{urdf_checks.joint_path(name)}: follows '{leader}' through a chain of mimic "
            f"joints or couplings with multiplier {multiplier!r} and offset {offset!r}: beyond "
            f"the bounds ±{bound:g} and ±{urdf_checks.MAX_LENGTH:g} of a single one"
        )


def resolve_locks(
    joints: dict, locked: dict[str, float], mimics: dict[str, tuple[str, float, float]]
) -> dict[str, float]:
    """Every joint to weld, with its position: the requested ones plus their mimic joints."""
    for name, position in locked.items():
        if name not in joints:
            raise ValueError(f"locked_joints: unknown joint '{name}'")
        kind = joints[name].type
        if kind == "fixed":
            raise ValueError(f"locked_joints: joint '{name}' is fixed already")
        if kind in ("floating", "planar"):
            raise ValueError(
                f"locked_joints: joint '{name}' is {kind}; locking multi-DoF joints is not "
                "supported (use root_joint='fixed' to weld the root, or lock single-DoF joints)"
            )
    out = dict(locked)
    for name, (leader, multiplier, offset) in mimics.items():
        if leader in locked:
            position = multiplier * locked[leader] + offset
            if name in locked and abs(locked[name] - position) > LOCK_TOLERANCE * max(
                1.0, abs(position)
            ):
                raise ValueError(
                    f"locked_joints: joint '{name}' mimics '{leader}' and must be locked at "
                    f"{position!r} (multiplier x {locked[leader]!r} + offset), not {locked[name]!r}"
                )
            out[name] = position
        elif name in locked:
            raise ValueError(
                f"locked_joints: joint '{name}' follows '{leader}', which is not locked; lock "
                f"'{leader}' (the joints that follow it are locked with it)"
                + (" or use mimic='independent'" if joints[name].mimic is not None else "")
            )
    return out


def sum_followers(
    sums: dict[str, tuple[tuple[str, float], ...]],
    others: dict[str, tuple[str, float, float]],
    mimics: dict[str, tuple[str, float, float]],
) -> dict[str, tuple[tuple[tuple[str, float], ...], float]]:
    """The joints that follow a sum of joints (:func:`.couplings.resolve_couplings`) ->
    (((independent leader, coefficient), ...), offset), a leader that follows another (a
    mimic joint) replaced by its own leader; URDFError for a joint that is both a mimic and
    such a follower, a mimic of such a follower, or a coefficient or offset beyond the bounds
    of a single tag."""
    both = sorted(set(mimics) & set(sums))
    if both:
        raise URDFError(f"joint '{both[0]}' has a <mimic> and is coupled by a <coupling>")
    for name, (leader, _m, _o) in others.items():
        if leader in sums:
            raise URDFError(
                f"joint '{name}' follows '{leader}', which follows a sum of joints by a "
                "<coupling>: make it follow one of those joints instead"
            )
    out = {}
    for name, terms in sums.items():
        merged: dict[str, float] = {}
        offset = 0.0
        for leader, coef in terms:
            if leader in others:  # q = c (m q_l + o)
                leader, m, o = others[leader]
                coef, offset = coef * m, offset + coef * o
            merged[leader] = merged.get(leader, 0.0) + coef
        for leader, coef in merged.items():
            check_resolved(name, leader, coef, offset)
        # leaders whose shares cancel drop out (lock_sums then makes a follower left with one
        # leader an ordinary coupling, and welds one left with none)
        out[name] = (tuple((leader, c) for leader, c in merged.items() if c != 0.0), offset)
    return out


def lock_sums(
    sums: dict[str, tuple[tuple[tuple[str, float], ...], float]], welded: dict[str, float]
) -> tuple[dict, dict[str, tuple[str, float, float]], dict[str, float]]:
    """The sums with their locked leaders' shares in the offset: (the sums left, the joints
    left following one leader -> (leader, coefficient, offset), the joints welded because
    every leader is).  ValueError for a locked follower whose leaders are not all locked, or
    locked elsewhere than they put it."""
    left, single, fixed = {}, {}, {}
    for name, (terms, offset) in sums.items():
        free = [(leader, coef) for leader, coef in terms if leader not in welded]
        offset += sum(coef * welded[leader] for leader, coef in terms if leader in welded)
        if name in welded:
            if free:
                raise ValueError(
                    f"locked_joints: joint '{name}' follows {', '.join(repr(n) for n, _ in terms)}"
                    f" by a <coupling>; lock {', '.join(repr(n) for n, _ in free)} (the joints"
                    " that follow them are locked with them)"
                )
            if abs(welded[name] - offset) > LOCK_TOLERANCE * max(1.0, abs(offset)):
                raise ValueError(
                    f"locked_joints: joint '{name}' follows a sum of locked joints and must be "
                    f"locked at {offset!r}, not {welded[name]!r}"
                )
        if not free:
            fixed[name] = offset
        elif len(free) == 1:
            single[name] = (free[0][0], free[0][1], offset)
        else:
            left[name] = (tuple(free), offset)
    return left, single, fixed
