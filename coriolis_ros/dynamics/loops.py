"""Closed kinematic loops: the ``<loop>`` element, loop closure and the map A(q) = dq/dy.

**In the URDF**, the top-level element read by the MIT fork of urdfdom and by GRBDA::

    <loop name="closure" type="revolute">
      <predecessor link="base"><origin xyz="0.3 0 0" rpy="0 0 0"/></predecessor>
      <successor link="rocker"><origin xyz="0.2 0 0" rpy="0 0 0"/></successor>
      <axis xyz="0 1 0"/>
    </loop>

joins two links that the URDF's tree does not connect directly: the frame ``origin`` on
``predecessor`` (frame P) and the frame ``origin`` on ``successor`` (frame S) are held
together by a joint of ``type`` about ``axis`` (a unit vector in P and in S; default x):

    revolute, continuous  the origins coincide and the axis seen from P equals the axis
                          seen from S (P and S may turn about it): 5 constraints
    prismatic             P and S have the same orientation and S's origin lies on P's axis
                          line (S may slide along it): 5 constraints
    fixed                 P and S coincide: 6 constraints

The URDF's joints form the *spanning tree*; its coordinates q are those of every tree joint.
The loops hold q on a manifold of lower dimension: the independent coordinates y are the
positions of a subset of the tree's joints (``independent_joints``), and the other joints of
the loops, the *dependent* ones z, follow from the closure. The velocities obey K(q) qdot = 0
(K: the loops' constraint Jacobian) and qdot = A(q) ydot with A = [1; -K_z^+ K_y] (rows of y,
then z; ``^+``: least squares, exact because the constraints are consistent), the
spanning-tree method of Wensing & Slotine, Section VI-C1. A loop drawn in a plane but written
in 3-D repeats constraints (a planar four-bar has rank 2, not 5): the rank is found by a
rank-revealing factorization and the DoF is the tree's minus that rank.

Kinematics here are computed with the root of the tree held at the world's origin: every
quantity of a loop is relative (frame S with respect to frame P), so the root's own motion
drops out of K and A (their root columns are zero).

Joints that follow a leader at a constant ratio (mimic joints that follow, geared rotors:
q_f = ratio q_l + offset) are dependent too, but not through Newton: they take their
leader's position, and A's and dA's rows are ratio times the leader's, after each closure.
So a follower may not move a loop (it may not be a joint above a loop's frames): a rotor
hanging from a link of the linkage, or a mimic finger, is fine.

Not supported (a ``URDFError`` names the loop): loops through a floating or planar joint
other than the root's; a follower that moves a loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .budgets import christoffel_refusal
from .errors import URDFError
from .model import (
    FM_BODY,
    FM_R,
    FM_T,
    FREE,
    MF_PARENT,
    MF_Q,
    MF_R,
    MF_T,
    MF_TYPE,
    PLANAR,
    PRISMATIC,
    Model,
)

LOOP_TYPES = ("revolute", "continuous", "prismatic", "fixed")
# Newton's tolerance on the closure residual (metres for positions, sine of the angle for
# orientations) and its iteration budget.
CLOSURE_TOL = 1e-12
MAX_NEWTON_STEPS = 50
MAX_STEP = 0.2  # largest change of a dependent joint in one Newton step (rad or m)
# Rank of the loops' Jacobian: singular values below RANK_RTOL times the largest are zero
# (a planar loop written in 3-D repeats constraints: its extra singular values are ~1e-16).
RANK_RTOL = 1e-9
# A configuration where the dependent joints' Jacobian K_z has a singular value below
# SINGULAR_RTOL times its largest is a dead point: A = -K_z^+ K_y grows like 1 / sigma_min, so
# beyond this the velocities of the dependent joints are meaningless (and Newton, whose error
# near a dead point is the square root of its residual, cannot place them).
SINGULAR_RTOL = 1e-6
# Loop frame offsets are bounded like link lengths (metres).
MAX_OFFSET = 1e6
# The loops' rank is K's largest over the neutral configuration and this many others, the
# loops' joints moved from it by up to GENERIC_MOVE (rad or m), from a fixed seed.
GENERIC_SAMPLES = 3
GENERIC_MOVE = 0.5
GENERIC_SEED = 20


@dataclass(frozen=True)
class Loop:
    """One ``<loop>``: frame P = ``pred_pose`` on ``predecessor``, frame S = ``succ_pose`` on
    ``successor`` (each a (rotation, translation) in the link's frame), joined by ``type``
    about the unit ``axis``."""

    name: str
    type: str
    predecessor: str
    successor: str
    pred_pose: tuple
    succ_pose: tuple
    axis: tuple


def _where(name: str | None, index: int) -> str:
    return f"/robot/loop[@name='{name}']" if name else f"/robot/loop[{index}]"


def _vector(elem, attr: str, default: str, where: str) -> np.ndarray:
    text = default if elem is None else elem.get(attr, default)
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        raise URDFError(f"{where} {attr}={text!r}: not three numbers") from None
    if len(values) != 3 or not all(math.isfinite(x) for x in values):
        raise URDFError(f"{where} {attr}={text!r}: needs three finite numbers")
    return np.array(values)


def _rpy(rpy: np.ndarray) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(rpy[0]), math.sin(rpy[0])
    cp, sp = math.cos(rpy[1]), math.sin(rpy[1])
    cy, sy = math.cos(rpy[2]), math.sin(rpy[2])
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def read_loops(root) -> list[Loop]:
    """The ``<loop>`` elements of a ``<robot>`` element tree; URDFError naming a bad one."""
    out, names = [], set()
    for index, elem in enumerate(root.findall("loop"), start=1):
        name = elem.get("name")
        where = _where(name, index)
        if not name:
            raise URDFError(f"{where}: a <loop> has no name attribute")
        if name in names:
            raise URDFError(f"{where}: duplicate loop name '{name}'")
        names.add(name)
        kind = elem.get("type", "revolute")
        if kind not in LOOP_TYPES:
            raise URDFError(f"{where}: type {kind!r} is not one of {', '.join(LOOP_TYPES)}")
        ends = []
        for role in ("predecessor", "successor"):
            child = elem.find(role)
            link = None if child is None else child.get("link")
            if not link:
                raise URDFError(f'{where}: needs <{role} link="...">')
            origin = child.find("origin")
            xyz = _vector(origin, "xyz", "0 0 0", f"{where}/{role}/origin")
            rpy = _vector(origin, "rpy", "0 0 0", f"{where}/{role}/origin")
            if np.max(np.abs(xyz)) > MAX_OFFSET:
                raise URDFError(
                    f"{where}/{role}/origin: xyz {xyz.tolist()} is beyond {MAX_OFFSET:g} m"
                )
            ends.append((link, (_rpy(rpy), xyz)))
        if ends[0][0] == ends[1][0]:
            raise URDFError(f"{where}: predecessor and successor are the same link {ends[0][0]!r}")
        axis = _vector(elem.find("axis"), "xyz", "1 0 0", f"{where}/axis")
        norm = float(np.linalg.norm(axis))
        if not norm > 1e-9:
            raise URDFError(f"{where}/axis: the axis {axis.tolist()} has no direction")
        axis = axis / norm
        out.append(Loop(name, kind, ends[0][0], ends[1][0], ends[0][1], ends[1][1], tuple(axis)))
    return out


# ----------------------------------------------------------------------------- kinematics


@dataclass
class _Pose:
    """Every body's world rotation R and origin t (the root at the world's origin) and every
    row's motion axis S (angular, then linear at the origin; zero on the root's rows)."""

    R: np.ndarray  # (n, 3, 3)
    t: np.ndarray  # (n, 3)
    S: np.ndarray  # (n, 6)


def _kernels():
    """The compiled loop kernels, frozen to one signature each (compiled or loaded once)."""
    from numba import types

    from .kernel_table import RF2, compile_frozen
    from .kernels import closed_entry as ce
    from .kernels import loop_closure as lc

    i1, i2, i3 = (types.Array(types.int64, d, "C") for d in (1, 2, 3))
    f1, f2, f3 = (types.Array(types.float64, d, "C") for d in (1, 2, 3))
    return {
        "placements": compile_frozen(lc.placements, (i2, f2, f1, f3, f2, f2), types.none),
        "frames": compile_frozen(lc.all_frames, (f3, f2, i2, f2, f3), types.none),
        "jacobian": compile_frozen(lc.jacobian, (i2, i3, f2, f3, i1, f2, f2, f2), types.none),
        "close_loops": compile_frozen(ce.close_loops, (i1, f1, f1, types.boolean)),
        "update": compile_frozen(ce.update, (i1, f1, f1, f1)),
        "coriolis": compile_frozen(ce.closed_coriolis, (RF2, f1, f1, f1, f2, f2, f2)),
        "christoffel": compile_frozen(ce.closed_christoffel, (RF2, f1, f1, f3)),
        "coriolis_christoffel": compile_frozen(
            ce.closed_coriolis_christoffel, (RF2, f1, f1, f1, f2, f2, f2, f3)
        ),
    }


_KERNELS: dict = {}


class LoopClosure:
    """The loops of one spanning tree: closure by Newton, A(q) = dq/dy and its derivatives.

    ``independent`` lists the tree joints chosen as coordinates (``None``: the joints'
    ``independent`` attributes if the URDF has them, else the joints nearest the root of
    each loop, chosen by a rank-revealing factorization of K at the neutral configuration).
    ``scratch``: doubles of workspace for the tree's kernels after the closure's own.  The
    workspace also holds the tree's Gamma and the reduction's scratch for the Gamma entry
    points, unless with Gammabar they exceed ``gamma_budget`` bytes (:mod:`.budgets`): then
    :attr:`gamma_refusal` is the message, and those entry points refuse.
    """

    def __init__(
        self,
        tree: Model,
        loops,
        independent=None,
        flags=None,
        followers=(),
        scratch=0,
        gamma_budget=None,
    ):
        self.tree = tree
        self.loops = tuple(loops)
        n = tree.nv
        mf = tree.mf
        self._parent = mf[:, MF_PARENT].astype(np.int64)
        self._type = mf[:, MF_TYPE].astype(np.int64)
        self._qi = mf[:, MF_Q].astype(np.int64)
        self._Rpj = mf[:, MF_R : MF_R + 9].reshape(n, 3, 3).copy()
        self._tpj = mf[:, MF_T : MF_T + 3].copy()
        multi = (self._type == FREE) | (self._type == PLANAR)
        frames = {
            link: (int(fm[FM_BODY]), fm[FM_R : FM_R + 9].reshape(3, 3), fm[FM_T : FM_T + 3])
            for link, fm in zip(tree.frame_names, tree.fm, strict=True)
        }
        self._ends = []  # per loop: (pred row, R_P in body, t_P in body, succ ...)
        self._anc = []  # per loop: (rows above P's body, rows above S's body)
        rows_in_loops: set[int] = set()
        for loop in self.loops:
            where = f"/robot/loop[@name='{loop.name}']"
            ends = []
            for link, (r_o, t_o) in (
                (loop.predecessor, loop.pred_pose),
                (loop.successor, loop.succ_pose),
            ):
                if link not in frames:
                    raise URDFError(f"{where}: unknown link '{link}'")
                row, r_l, t_l = frames[link]
                ends.append((row, r_l @ r_o, r_l @ t_o + t_l))
            path = self._path(ends[0][0]) ^ self._path(ends[1][0])
            if not path:
                raise URDFError(
                    f"{where}: '{loop.predecessor}' and '{loop.successor}' are welded together "
                    "(no moving joint between them): the loop constrains nothing"
                )
            bad = sorted(tree.joint_names[i] for i in path if multi[i])
            if bad:
                raise URDFError(
                    f"{where}: the loop runs through the floating or planar joint(s) "
                    f"{', '.join(bad)}; loops may only contain revolute and prismatic joints"
                )
            rows_in_loops |= path
            self._ends.append(tuple(ends))
            self._anc.append((self._path(ends[0][0]), self._path(ends[1][0])))
        self.loop_rows = np.array(sorted(rows_in_loops), dtype=np.int64)
        self._followers(followers)
        self._axes = [np.array(loop.axis) for loop in self.loops]
        self.m = 6 * len(self.loops)
        self._pack(multi)
        self.dependent = self._choose_dependent(independent, flags or {})
        keep = np.ones(n, dtype=bool)
        keep[self.dependent] = False
        keep[self.follow[:, 0]] = False
        self.independent = np.flatnonzero(keep)
        # every joint that is not a coordinate: the loops' dependent joints and the followers
        self.not_coordinates = np.unique(np.concatenate([self.dependent, self.follow[:, 0]]))
        self._pack_map(scratch, gamma_budget)

    # ------------------------------------------------------------------ structure

    def _path(self, row: int) -> set[int]:
        out = set()
        while row >= 0:
            out.add(int(row))
            row = self._parent[row]
        return out

    def _followers(self, followers) -> None:
        """``follow`` (T, 2) int64: per term of a follower, the follower's row and a leader's;
        ``follow_f`` (T, 2): the term's coefficient and (on a follower's first term, else 0)
        its offset.  A follower's terms are consecutive: one for a mimic joint or a rotor, one
        per leader for a joint that follows a sum.  URDFError for a follower that moves a
        loop."""
        names = self.tree.joint_names
        moving: dict[int, str] = {}  # rows above some loop frame -> that loop
        for loop, (above_p, above_s) in zip(self.loops, self._anc, strict=True):
            for r in above_p | above_s:
                moving.setdefault(r, loop.name)
        rows, values = [], []
        for name, terms, offset in followers:
            f = names.index(name)
            if f in moving:
                leaders = ", ".join(f"'{leader}'" for leader, _ in terms)
                raise URDFError(
                    f"joint '{name}' follows {leaders} and moves the closed loop "
                    f"'{moving[f]}': a joint that follows another may not lie on a loop or "
                    "above one (load with mimic='independent', or make it independent)"
                )
            for k, (leader, coef) in enumerate(terms):
                rows.append((f, names.index(leader)))
                values.append((float(coef), float(offset) if k == 0 else 0.0))
        self.follow = np.array(rows, dtype=np.int64).reshape(len(rows), 2)
        self.follow_f = np.array(values, dtype=np.float64).reshape(len(values), 2)

    def _choose_dependent(self, independent, flags) -> np.ndarray:
        names = self.tree.joint_names
        loop_names = [names[i] for i in self.loop_rows]
        # every joint at zero; the placements hold a floating or planar row at the origin
        # without reading its coordinates (a free root's zero quaternion is never read)
        K, rank = self._generic_jacobian(np.zeros(self.tree.nq))
        if independent is not None:
            independent = list(independent)
            unknown = [j for j in independent if j not in names]
            if unknown:
                raise ValueError(f"independent_joints: unknown joint(s) {', '.join(unknown)}")
            rows = dict.fromkeys(int(f) for f, _ in self.follow)
            follows = [names[f] for f in rows if names[f] in independent]
            if follows:
                raise ValueError(
                    f"independent_joints: {', '.join(follows)} follow(s) another joint "
                    "(mimic or coupling) and cannot be independent"
                )
            chosen = set(independent)
        elif any(name in flags for name in loop_names):
            chosen = {name for name in loop_names if flags.get(name, True)}
        else:  # the deepest joints of the loops follow, the ones nearest the root lead
            dep: list[int] = []
            for col in range(len(loop_names) - 1, -1, -1):
                if len(dep) == rank:
                    break
                if self._rank(K[:, [*dep, col]]) == len(dep) + 1:
                    dep.append(col)
            chosen = {loop_names[c] for c in range(len(loop_names)) if c not in dep}
        dependent = [int(i) for i in self.loop_rows if names[i] not in chosen]
        if len(dependent) != rank:
            want = len(loop_names) - rank
            got = len(loop_names) - len(dependent)
            loops = ", ".join(loop.name for loop in self.loops)
            raise ValueError(
                f"the loops ({loops}) leave {want} of their joints "
                f"({', '.join(loop_names)}) independent; {got} chosen "
                f"({', '.join(n for n in loop_names if n in chosen) or 'none'}): "
                f"too {'many' if got > want else 'few'} independent joints"
            )
        return np.array(dependent, dtype=np.int64)

    def _generic_jacobian(self, q0: np.ndarray) -> tuple[np.ndarray, int]:
        """(K's loop columns, their rank) where that rank is largest: at q0 and at
        GENERIC_SAMPLES configurations with the loops' joints moved from it (a fixed
        sequence, so a model always loads the same way).  A neutral configuration is often
        special (every link in a line: GRBDA's planar four-bar is at its dead point there) and
        K loses rank at it; the mechanism's degrees of freedom are those of its regular
        configurations."""
        K = self.constraint_jacobian(q0, cols=self.loop_rows)
        rank = self._rank(K)
        rng = np.random.default_rng(GENERIC_SEED)
        cols = self._qi[self.loop_rows]
        for _ in range(GENERIC_SAMPLES):
            q = q0.copy()
            q[cols] += rng.uniform(-GENERIC_MOVE, GENERIC_MOVE, cols.size)
            Kq = self.constraint_jacobian(q, cols=self.loop_rows)
            rq = self._rank(Kq)
            if rq > rank:
                K, rank = Kq, rq
        return K, rank

    @staticmethod
    def _rank(K: np.ndarray) -> int:
        if K.size == 0:
            return 0
        s = np.linalg.svd(K, compute_uv=False)
        return int(np.sum(s > RANK_RTOL * s[0]))  # none for K = 0 (every s is 0)

    # ------------------------------------------------------------------ kinematics

    def _pack(self, multi: np.ndarray) -> None:
        """The geometry the compiled kernels read (:mod:`.kernels.loop_closure`), and the
        placements' workspace."""
        from .kernels import loop_closure as lc

        n, L = self.tree.nv, len(self.loops)
        kind = np.where(multi, lc.ROW_ROOT, np.where(self._type == PRISMATIC, 1, 0))
        self._tree_i = np.ascontiguousarray(np.stack([self._parent, kind, self._qi], axis=1))
        self._tree_f = np.ascontiguousarray(
            np.concatenate([self._Rpj.reshape(n, 9), self._tpj], axis=1)
        )
        kinds = {"revolute": lc.LOOP_REVOLUTE, "continuous": lc.LOOP_REVOLUTE,
                 "prismatic": lc.LOOP_PRISMATIC, "fixed": lc.LOOP_FIXED}  # fmt: skip
        self._loop_i = np.zeros((L, 3), dtype=np.int64)
        self._loop_f = np.zeros((L, 27))
        self._anc_mask = np.zeros((L, 2, n), dtype=np.int64)
        for k, loop in enumerate(self.loops):
            (bp, rp, tp), (bs, rs, ts) = self._ends[k]
            self._loop_i[k] = kinds[loop.type], bp, bs
            self._loop_f[k] = np.concatenate([rp.ravel(), tp, rs.ravel(), ts, self._axes[k]])
            for side, rows in enumerate(self._anc[k]):
                self._anc_mask[k, side, sorted(rows)] = 1
        self._pose = _Pose(np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 6)))
        self._s3, self._s6 = np.zeros((lc.S3_ROWS, 3)), np.zeros((lc.S6_ROWS, 6))
        self._fk = np.zeros((L, 10, 3))  # the loops' frames at the placements
        self._scale = 1.0 + float(np.max(np.abs(self._tpj), initial=0.0))

    def _pack_map(self, scratch: int, gamma_budget) -> None:
        """The packed arrays of :mod:`.kernels.closed_entry` (ci, cf, cw and ``scratch``
        doubles are views of ``packed``; cw has room for the tree's Gamma unless
        ``gamma_budget`` refuses it: :attr:`gamma_refusal`), with views of the workspace
        regions read here: ``last``
        (the last closed configuration), ``target`` (the configuration to close), ``A``,
        ``dA``, ``info`` and ``residual``."""
        from .kernels import closed_entry as ce

        n, nq, L = self.tree.nv, self.tree.nq, len(self.loops)
        ny, nz = self.independent.size, self.dependent.size
        lead = np.flatnonzero(np.isin(self.independent, self.loop_rows))
        lead_rows = self.independent[lead]
        self.lead_rows = lead_rows  # the loops' independent joints (tree rows)
        # the index in q of every joint that is not a coordinate (dependent and followers)
        self.dependent_q = self._qi[self.not_coordinates]
        dependent_q = {int(i) for i in self.dependent_q}
        self.keep = np.array([i for i in range(nq) if i not in dependent_q], dtype=np.int64)
        nl, nqy = lead.size, self.keep.size
        nf = self.follow.shape[0]
        # Gamma's room (the tree's Gamma and the reduction's scratch) with Gammabar's ny^3
        size = 8 * (ce.gamma_size(n, ny) + ny**3)
        refusal = "" if gamma_budget is None else christoffel_refusal(size, gamma_budget)
        self.gamma_refusal = refusal
        offsets, regions, size_i, size_f, size_w = ce.layout(
            n, nq, L, nz, nl, ny, nqy, nf, not refusal
        )
        ci = np.zeros(size_i, dtype=np.int64)
        header = (n, nq, L, nz, nl, ny, nqy, MAX_NEWTON_STEPS, nf, size_i)
        ci[[ce.I_N, ce.I_NQ, ce.I_L, ce.I_NZ, ce.I_NL, ce.I_NY, ce.I_NQY, ce.I_MAX_STEPS,
            ce.I_NF, ce.I_CI]] = header  # fmt: skip
        data = {"tree": self._tree_i, "loop": self._loop_i, "anc": self._anc_mask,
                "dep": self.dependent, "lead_q": self._qi[lead_rows], "lead_c": lead,
                "lead_r": lead_rows, "keep": self.keep, "perm": np.zeros(nz),
                "fol": self.follow, "wrap": self._wrapped(),
                "lwrap": [int(self.tree.joint_types[r] == "continuous") for r in lead_rows],
                }  # fmt: skip
        heads = {"tree": ce.I_TREE, "loop": ce.I_LOOP, "anc": ce.I_ANC, "dep": ce.I_DEP,
                 "lead_q": ce.I_LEAD_Q, "lead_c": ce.I_LEAD_C, "lead_r": ce.I_LEAD_R,
                 "keep": ce.I_KEEP, "perm": ce.I_PERM, "fol": ce.I_FOL,
                 "wrap": ce.I_WRAP, "lwrap": ce.I_LWRAP}  # fmt: skip
        for name, (at, size) in offsets.items():
            ci[heads[name]] = at
            ci[at : at + size] = np.asarray(data[name]).ravel()
        for w, (at, _) in enumerate(regions):
            ci[ce.I_W + w] = at
        params = [CLOSURE_TOL * self._scale, MAX_STEP, RANK_RTOL, SINGULAR_RTOL]
        # ci's words first (their bits: the kernels read them as int64), cf, cw, then
        # ``scratch`` doubles for the tree's kernels (:func:`.kernels.closed_entry.unpack`)
        packed = np.zeros(size_i + size_f + size_w + scratch)
        words = packed[:size_i].view(np.int64)
        words[:] = ci
        cf = packed[size_i : size_i + size_f]
        cf[:] = np.concatenate([self._tree_f.ravel(), self._loop_f.ravel(), params,
                                self.follow_f.ravel()])  # fmt: skip
        cw = packed[size_i + size_f : size_i + size_f + size_w]
        self.ci, self.cf, self.cw, self.packed = words, cf, cw, packed

        def view(region, shape):
            at, size = regions[region]
            return cw[at : at + size].reshape(shape)

        self.last = view(ce.W_LAST, (nq,))
        self.target = view(ce.W_Q, (nq,))
        self.A = view(ce.W_A, (n, ny))
        self.A[self.independent, np.arange(ny)] = 1.0
        self.dA = view(ce.W_DA, (n, ny, ny))
        self.info = view(ce.W_INFO, (3,))
        self.residual = view(ce.W_RES, (6 * L,))

    def _wrapped(self) -> np.ndarray:
        """1 for each dependent joint that is continuous and leads no follower (its position
        is kept in [-pi, pi] after each closure), else 0."""
        types = self.tree.joint_types
        leaders = {int(lead) for _, lead in self.follow}
        return np.array(
            [int(types[z] == "continuous" and int(z) not in leaders) for z in self.dependent],
            dtype=np.int64,
        )

    @property
    def _k(self) -> dict:
        if not _KERNELS:
            _KERNELS.update(_kernels())
        return _KERNELS

    def placements(self, q: np.ndarray) -> _Pose:
        """Every body's placement and motion axis at q (in this closure's workspace: the next
        call overwrites it)."""
        pose = self._pose
        self._k["placements"](self._tree_i, self._tree_f, q, pose.R, pose.t, pose.S)
        self._k["frames"](pose.R, pose.t, self._loop_i, self._loop_f, self._fk)
        return pose

    def constraint_jacobian(self, q: np.ndarray, cols=None, placed: bool = False) -> np.ndarray:
        """K(q) (6 per loop, nv): K qdot = 0 along every motion that keeps the loops closed.
        With ``cols`` (tree rows), only those columns; ``placed``: the workspace already holds
        the placements at q.

        Column j is the loops' relative motion when joint j alone turns at unit speed; a joint
        above both of a loop's frames moves that loop rigidly, and its column is zero."""
        if not placed:
            self.placements(q)
        cols = np.arange(self.tree.nv) if cols is None else np.asarray(cols, dtype=np.int64)
        K = np.zeros((self.m, cols.size))
        pose = self._pose
        self._k["jacobian"](
            self._loop_i, self._anc_mask, pose.S, self._fk, np.ascontiguousarray(cols), K,
            self._s3, self._s6,
        )  # fmt: skip
        return K

    def close(self, q, continuation: bool) -> np.ndarray:
        """Close every loop by moving the dependent joints of the tree configuration ``q``
        (:func:`.kernels.loop_closure.closed_state`) and fill A = dq/dy and
        dA[:, j, k] = dA[:, j]/dy_k there; returns :attr:`last`, the result (a view: the next
        call overwrites it).

        Damped Newton on the dependent joints, from their values in q; with ``continuation``,
        from :attr:`last` instead (the previous closed configuration): the loops' independent
        joints move from its values to q's in steps of at most ``MAX_STEP``, each closed by
        Newton from the last, so the solution stays on the assembly branch it was on.  A and
        dA come from K A = 0 and its derivative, (D_{A_k} K) A_j + K dA_j/dy_k = 0, solved for
        the dependent rows.  ValueError naming the loop that does not close, closes on the
        wrong branch, or the dead point."""
        status = self.try_close(q, continuation)
        if status:
            self.fail(status)
        return self.last

    def try_close(self, q, continuation: bool) -> int:
        """:meth:`close`, returning the kernel's status (0: closed; see :meth:`fail`)."""
        self.target[:] = q
        return self._k["close_loops"](self.ci, self.cf, self.cw, continuation)

    def singular(self, status: int) -> bool:
        """Whether a :meth:`try_close` status says the loops closed at a dead point."""
        from .kernels import closed_entry as ce
        from .kernels import loop_closure as lc

        return status == ce.CLOSURE + lc.SINGULAR

    def fail(self, status: int) -> None:
        """Raise the ValueError of a :mod:`.kernels.closed_entry` closure status."""
        from .kernels import closed_entry as ce
        from .kernels import loop_closure as lc

        outcome = status - ce.CLOSURE
        info, r = self.info, self.residual
        if outcome == lc.WRONG_BRANCH:
            raise ValueError(
                f"loop '{self.loops[int(info[1])].name}' closes with its frames turned half a "
                "turn from each other (the wrong assembly branch): start from a guess nearer "
                "the assembly"
            )
        if outcome == lc.SINGULAR:
            names = ", ".join(self.tree.joint_names[i] for i in self.dependent)
            raise ValueError(
                f"singular configuration: the loops' Jacobian loses rank in the dependent "
                f"joints ({names}; pivot ratio {info[0]:.3g} below {SINGULAR_RTOL:g}); the "
                "mechanism is at a dead point"
            )
        if outcome == lc.FOLLOWER_RANGE:
            from .kernels.kinematics import MAX_ABS

            first = int(info[1])
            (f, lead), (ratio, offset) = self.follow[first], self.follow_f[first]
            names = self.tree.joint_names
            terms = self.follow[self.follow[:, 0] == f]
            if len(terms) > 1:
                leaders = ", ".join(f"'{names[r]}'" for _, r in terms)
                raise ValueError(
                    f"joint '{names[f]}' follows the sum of {leaders} (coefficients "
                    f"{', '.join(f'{c:g}' for c in self.follow_f[self.follow[:, 0] == f, 0])}, "
                    f"offset {offset:g}): at these positions it would be beyond ±{MAX_ABS:g}"
                )
            limit = (MAX_ABS - abs(offset)) / abs(ratio)
            raise ValueError(
                f"joint '{names[f]}' follows '{names[lead]}' (ratio {ratio:g}, offset "
                f"{offset:g}): at this position of '{names[lead]}' it would be beyond "
                f"±{MAX_ABS:g}; '{names[lead]}' must stay within ±{limit:.6g}"
            )
        if outcome == lc.TOO_FAR:
            names = ", ".join(self.tree.joint_names[i] for i in self.lead_rows)
            raise ValueError(
                f"the loops' independent joints ({names}) moved by {info[0]:.6g} (rad or m) "
                "since the last closed configuration: continuation along that path would take "
                f"more than {lc.MAX_CONTINUATION} steps of {MAX_STEP:g}; close from a guess "
                "instead (close_loops(y, guess=q_tree))"
            )
        if outcome in (lc.NOT_CLOSED, lc.NOT_FINITE):
            per_loop = np.abs(r).reshape(len(self.loops), 6)
            worst = int(np.argmax(np.nan_to_num(per_loop, nan=np.inf).max(1)))
            raise ValueError(
                f"loop '{self.loops[worst].name}' does not close from the starting guess: "
                f"residual {per_loop[worst].max():.3g} after "
                f"{MAX_NEWTON_STEPS} Newton steps (no assembly of the mechanism near the guess "
                "at these independent positions)"
            )
        raise RuntimeError(f"internal error: loop closure status {status}")
