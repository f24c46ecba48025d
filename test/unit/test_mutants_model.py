"""dynamics.model's Model against values derived by hand from small URDFs.

The tree (rows in depth-first order, as the module's docstring lays them out):

* ``root_joint="floating"``: rows 0..5 (one free flyer, six velocity rows, seven coordinates),
  each row the parent of the next; the base link's body is row 5;
* ``a`` (revolute) from the base: row 6, parent 5; ``b`` (revolute) from ``a``: row 7,
  parent 6; ``c`` (prismatic) from the base: row 8, parent 5; ``d`` (planar) from ``c``:
  rows 9..11 (three velocity rows, three coordinates), parent 8, then 9, then 10.

So nv = 12, nq = 7 + 1 + 1 + 1 + 3 = 13, the longest path from the world has
6 + 1 + 3 = 10 rows (through c and d; the one through a and b has 8), the joints start at
rows 0, 6, 7, 8, 9 with 6, 1, 1, 1, 3 rows and at coordinates 0, 7, 8, 9, 10.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.dynamics import model as model_module
from coriolis_ros.dynamics.model import Model
from coriolis_ros.dynamics.urdf_model import model_from_urdf


def _inertial(mass: float) -> str:
    return (
        f'\n    <inertial><mass value="{mass!r}"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
    )


TREE = robot(
    link("base", _inertial(5.0)), link("la", _inertial(1.0)), link("lb", _inertial(0.5)),
    link("lc", _inertial(0.25)), link("ld", _inertial(2.0)),
    joint("a", "base", "la"),
    joint("b", "la", "lb", axis="0 1 0"),
    joint("c", "base", "lc", jtype="prismatic", axis="1 0 0"),
    joint("d", "lc", "ld", jtype="planar"),
    name="hand_tree",
)  # fmt: skip


@pytest.fixture(scope="module")
def floating():
    return model_from_urdf(TREE, root_joint="floating")


@pytest.fixture(scope="module")
def fixed():
    return model_from_urdf(TREE)


def test_sizes_and_parents_of_a_floating_tree(floating):
    assert floating.nv == 12
    assert floating.nq == 13
    assert floating.parent.tolist() == [-1, 0, 1, 2, 3, 4, 5, 6, 5, 8, 9, 10]
    assert floating.parent.dtype == np.int64
    assert floating.tree_depth == 10


def test_joints_lists_every_joint_once_with_its_rows_and_coordinates(floating):
    joints = floating.joints()
    assert [(first, rows, q) for _, first, rows, q in joints] == [
        (0, 6, 0), (6, 1, 7), (7, 1, 8), (8, 1, 9), (9, 3, 10)
    ]  # fmt: skip
    kinds = [kind for kind, *_ in joints]
    # the two revolute joints share a kind; floating, revolute, prismatic, planar differ
    assert kinds[1] == kinds[2]
    assert len({kinds[0], kinds[1], kinds[3], kinds[4]}) == 4
    # the kernels read each row's kind: the type table agrees with the URDF types
    types = [floating.joint_types[first] for _, first, _, _ in joints]
    assert types == ["floating", "revolute", "revolute", "prismatic", "planar"]


def test_joint_sizes_of_each_kind(floating):
    kinds = {floating.joint_types[first]: kind for kind, first, _, _ in floating.joints()}
    nv = {"floating": 6, "revolute": 1, "prismatic": 1, "planar": 3}
    nq = {"floating": 7, "revolute": 1, "prismatic": 1, "planar": 3}
    for name, kind in kinds.items():
        assert model_module.JOINT_NV[kind] == nv[name], name
        assert model_module.JOINT_NQ[kind] == nq[name], name


def test_a_fixed_root_tree(fixed):
    # rows: a 0, b 1, c 2, d 3..5
    assert fixed.nv == 6
    assert fixed.nq == 6
    assert fixed.parent.tolist() == [-1, 0, -1, 2, 3, 4]
    assert fixed.tree_depth == 4  # c then d's three rows
    assert [(first, rows, q) for _, first, rows, q in fixed.joints()] == [
        (0, 1, 0), (1, 1, 1), (2, 1, 2), (3, 3, 3)
    ]  # fmt: skip


def test_total_mass_counts_the_moving_bodies_only(floating, fixed):
    assert floating.total_mass == pytest.approx(5.0 + 1.0 + 0.5 + 0.25 + 2.0, rel=1e-15)
    assert fixed.total_mass == pytest.approx(1.0 + 0.5 + 0.25 + 2.0, rel=1e-15)  # base welded
    assert isinstance(fixed.total_mass, float)


def test_the_depth_is_measured_from_the_world_whatever_the_order():
    # two chains from the world: rows 0-1-2 (depth 3) and 3 (depth 1); the last row is shallow
    model = model_from_urdf(robot(
        link("base"), link("l1"), link("l2"), link("l3"), link("l4"),
        joint("a", "base", "l1"), joint("b", "l1", "l2"), joint("c", "l2", "l3"),
        joint("e", "base", "l4"),
    ))  # fmt: skip
    assert model.parent.tolist() == [-1, 0, 1, -1]
    assert model.tree_depth == 3


def _bare(rows: int, **extra) -> Model:
    """A Model built directly, without a URDF: ``rows`` revolute rows in a chain."""
    mf = np.zeros((rows, 29))  # 9 + 3 + 1 + 3 + 9 + 4: the columns the docstring lists
    mf[:, 25] = np.arange(rows) - 1  # the parent column, after the 25 floats of the body
    names = tuple(f"j{i}" for i in range(rows))
    return Model(
        name="bare", joint_names=names, joint_types=("revolute",) * rows,
        body_links=names, root_link="world_link", mf=mf, gravity=np.zeros(3), **extra
    )  # fmt: skip


def test_without_position_names_q_has_one_coordinate_per_row():
    model = _bare(3)
    assert model.nv == 3 and model.nq == 3
    assert model.tree_depth == 3


def test_an_empty_model_has_depth_zero():
    model = _bare(0)
    assert model.nv == 0 and model.nq == 0
    assert model.tree_depth == 0
    assert model.joints() == []
    assert model.total_mass == 0.0


def test_a_model_without_frames_has_an_empty_frame_table():
    model = _bare(2)
    assert model.frame_names == ()
    # one row per frame, each the body row, a rotation (9) and an origin (3)
    assert model.fm.shape == (0, 1 + 9 + 3)


def test_the_model_is_immutable():
    model = _bare(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.name = "other"  # type: ignore[misc]
    for array in (model.mf, model.gravity, model.fm):
        assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        model.mf[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        model.gravity[2] = 1.0


def test_the_frame_table_given_is_kept(floating):
    assert floating.frame_names == ("base", "la", "lb", "lc", "ld")
    assert floating.fm.shape == (5, 13)
    assert not floating.fm.flags.writeable


def test_the_column_layouts_tile_their_width():
    """The packed layouts of the docstring: every column belongs to exactly one field."""
    m = model_module
    fields = [(m.MF_R, 9), (m.MF_T, 3), (m.MF_M, 1), (m.MF_C, 3), (m.MF_I, 9),
              (m.MF_PARENT, 1), (m.MF_TYPE, 1), (m.MF_Q, 1), (m.MF_SUB, 1)]  # fmt: skip
    columns = sorted(c for start, size in fields for c in range(start, start + size))
    assert columns == list(range(29)) and m.MF_WIDTH == 29
    frames = [(m.FM_BODY, 1), (m.FM_R, 9), (m.FM_T, 3)]
    columns = sorted(c for start, size in frames for c in range(start, start + size))
    assert columns == list(range(13)) and m.FM_WIDTH == 13
