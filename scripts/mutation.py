"""Mutation testing of coriolis_ros's Python modules: do the tests notice a wrong operator?

For each target module, every mutation site is found in its syntax tree: a comparison
operator swapped (``<`` <-> ``<=``, ``<`` -> ``!=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``,
``in`` <-> ``not in``), an arithmetic one (``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``/``),
``and`` <-> ``or``, a ``not`` removed, a number changed (n -> n + 1, 0.0 -> 1.0, x -> 2x), a
boolean constant flipped, an augmented assignment inverted (``+=`` <-> ``-=``), a ``return``
value replaced by ``None``. One mutant at a time is written over the INSTALLED copy of the
module (the tests import the installed package; the Numba kernels' caches stay valid since
their files are untouched), the module's tests run (``pytest -x``), and the original is put
back. A mutant is killed when the tests fail (or time out, or crash), survives when they pass.
``--kernels`` mutates the Numba kernels instead (every test run compiles them afresh in a
cache directory of its own): use ``--sample F`` to run a seeded random share of each module's
mutants.

    python scripts/mutation.py                       # every target below
    python scripts/mutation.py --module stream/joint_state_buffer.py [--max 50]
    python scripts/mutation.py --list                # the targets and their tests
    python scripts/mutation.py --module M --survivors old-report.json  # its survivors only
    python scripts/mutation.py --kernels --sample 0.02 --seed 1  # 2 % of the kernels' mutants

Lines marked ``# pragma: no mutate`` are skipped, and so are docstrings and the text of
messages (strings are never mutated). The score is killed / (killed + survived); the
surviving mutants are printed with their line and column, to be killed by a test or shown
equivalent. Equivalent mutants (no program behaviour can differ) are listed, each with its
reason, in ``test/mutation_equivalents.txt`` (``--equivalents``), one a line::

    stream/base_state.py | 90:11 | comparison -> GtE | the norm is never exactly 1 + 1e-3

A survivor listed there is reported as equivalent, and the score excluding them,
killed / (killed + survived - equivalent), is printed too. An entry that matches no mutant
(the code moved) or a killed one is reported, so the list stays true.
Results go to ``mutation-report.json`` (``--report``). If the run is interrupted, the
original module is restored (``make install`` restores every module too).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import math
import os
import random
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = "test/unit/test_stream_mutants.py"  # the stream's bounds, fast: first, so most die early
FOLLOWERS = "test/unit/test_stream_follower_bounds.py"  # the followers' bound, fast too
EQUIVALENTS = "test/mutation_equivalents.txt"
REGRESSOR = "test/unit/test_dynamics_regressor.py::"
PARAMETER_TESTS = [REGRESSOR + name for name in (  # the fast ones, about the parameters
    "test_parameters_are_pinocchios_and_round_trip", "test_floating_base_body_comes_first",
    "test_parameter_links_follow_the_tree_with_coupled_joints",
    "test_inconsistent_body_is_refused_by_name_and_nothing_changes",
    "test_unchecked_parameters_still_match_pinocchio",
    "test_bad_parameter_vectors_are_refused_whatever_the_check",
)]  # fmt: skip
BUFFER_TESTS = [UNITS, FOLLOWERS, "test/unit/test_mutants_joint_state_buffer.py",
                "test/unit/test_offline_bag_stream.py",
                "test/unit/test_bag_equals_node.py"]  # fmt: skip
DYNAMICS_TESTS = [
    "test/packaging/test_urdf_hygiene.py",  # urdf_checks' own: xacro, paths, inertia warnings
    "test/unit/test_dynamics_urdf_errors.py",
    "test/unit/test_finite_urdf.py",
    "test/unit/test_dynamics_input_edges.py",
    "test/unit/test_dynamics_api.py",
    "test/unit/test_momentum_observer.py",
]
ARMATURE = "test/unit/test_dynamics_armature.py::"
# module (under coriolis_ros/) -> its tests (the Python modules; the kernels' are below).
TARGETS = {
    "stream/joint_state_buffer.py": BUFFER_TESTS,
    "stream/mimic_check.py": [UNITS, FOLLOWERS, "test/unit/test_node_mimic_check.py"],
    "stream/observer_feed.py": [UNITS, "test/unit/test_node_observer_feed.py",
                                "test/unit/test_bag_equals_node.py"],
    "stream/base_state.py": ["test/unit/test_node_base_state.py",
                             "test/unit/test_offline_bag_base.py"],
    "stream/odometry_wire.py": ["test/integration/test_node_odometry_wire.py",
                                "test/unit/test_node_base_state.py"],
    "stream/loop_check.py": [UNITS, "test/unit/test_node_loops.py", "test/unit/test_node_units.py"],
    "dynamics/urdf_checks.py": DYNAMICS_TESTS,
    "dynamics/observer.py": ["test/unit/test_momentum_observer.py",
                             "test/unit/test_node_observer_feed.py",
                             "test/unit/test_dynamics_loops.py::"
                             "test_momentum_observer_finds_an_external_torque_on_a_closed_chain"],
    "dynamics/budgets.py": ["test/unit/test_budgets.py"],
    "dynamics/rotor_fold.py": ["test/unit/test_mutants_rotor_fold.py",
                               "test/unit/test_dynamics_rotors.py"],
    "dynamics/bounds.py": ["test/unit/test_mutants_bounds.py",
                           "test/unit/test_factorizations.py::test_coriolis_bound_inputs",
                           "test/unit/test_factorizations.py::"
                           "test_coriolis_bound_holds_and_is_not_loose"],
    "dynamics/configuration.py": ["test/unit/test_mutants_configuration.py",
                                  "test/unit/test_dynamics_floating.py::"
                                  "test_neutral_and_integrate_against_pinocchio",
                                  "test/unit/test_dynamics_floating.py::"
                                  "test_multi_dof_joints_inside_the_tree",
                                  "test/unit/test_dynamics_floating.py::"
                                  "test_quaternion_is_normalized_before_use"],
    "dynamics/urdf_followers.py": ["test/unit/test_mutants_urdf_followers.py",
                                   "test/unit/test_dynamics_locked.py",
                                   "test/unit/test_dynamics_mimic.py",
                                   "test/unit/test_finite_urdf.py::test_resolved_mimic_chain_bounded",
                                   "test/unit/test_finite_urdf.py::"
                                   "test_gravity_locked_joints_and_rotors_bounded",
                                   "test/unit/test_dynamics_rotors.py::"
                                   "test_bad_couplings_are_urdf_errors_naming_them",
                                   "test/unit/test_dynamics_rotors.py::"
                                   "test_a_coupled_joint_that_also_mimics_is_refused",
                                   "test/unit/test_dynamics_rotors.py::"
                                   "test_a_gear_train_multiplies_the_ratios",
                                   "test/unit/test_dynamics_rotors.py::"
                                   "test_locking_a_rotor_alone_names_its_leader",
                                   "test/unit/test_dynamics_sum_couplings.py"],
    "dynamics/coordinates.py": ["test/unit/test_mutants_coordinates.py",
                                "test/unit/test_follower_bounds.py",
                                "test/unit/test_dynamics_mimic.py"],
    "dynamics/constraints.py": ["test/unit/test_mutants_constraints.py",
                                "test/unit/test_dynamics_constraints.py"],
    "dynamics/urdf_geometry.py": ["test/unit/test_mutants_urdf_geometry.py",
                                  "test/unit/test_dynamics_urdf_errors.py",
                                  "test/unit/test_dynamics_pinocchio.py"],
    "dynamics/couplings.py": ["test/unit/test_mutants_couplings.py",
                              "test/unit/test_dynamics_rotors.py",
                              "test/unit/test_dynamics_sum_couplings.py",
                              "test/unit/test_mutants_urdf_followers.py",
                              "test/integration/test_rotors_frontends.py::"
                              "test_load_rotors_reads_both_layouts",
                              "test/integration/test_rotors_frontends.py::"
                              "test_load_rotors_refuses_bad_files_naming_them",
                              "test/integration/test_rotors_frontends.py::"
                              "test_load_rotors_names_a_missing_file"],
    "dynamics/closed_chain.py": ["test/unit/test_mutants_closed_chain.py",
                                 "test/unit/test_dynamics_loop_precision.py::"
                                 "test_rates_beyond_the_bound_in_the_tree_name_the_joint_not_an_"
                                 "internal_error",
                                 "test/unit/test_dynamics_loop_jumps.py::"
                                 "test_dependent_positions_received_start_newton_as_a_guess_would",
                                 "test/unit/test_dynamics_loop_jumps.py::"
                                 "test_dependent_positions_are_checked",
                                 "test/unit/test_dynamics_loops.py",
                                 "test/unit/test_dynamics_loop_neutral.py",
                                 "test/unit/test_dynamics_coriolis_christoffel.py"],
    "dynamics/loops.py": ["test/unit/test_mutants_loops.py",
                          "test/unit/test_dynamics_loops.py",
                          "test/unit/test_dynamics_loop_jumps.py",
                          "test/unit/test_dynamics_loop_neutral.py",
                          "test/unit/test_mutants_closed_chain.py",
                          "test/unit/test_dynamics_coriolis_christoffel.py"],
    "dynamics/engine.py": ["test/unit/test_mutants_engine.py",
                           "test/unit/test_dynamics_api.py",
                           "test/unit/test_dynamics_input_edges.py",
                           "test/unit/test_mutants_coordinates.py",
                           "test/unit/test_mutants_rotor_fold.py",
                           "test/unit/test_dynamics_mimic.py::"
                           "test_mimic_composes_with_floating_base",
                           "test/unit/test_dynamics_mimic.py::"
                           "test_batches_of_a_coupled_model_equal_its_single_state_calls_bitwise"],
    "dynamics/frames.py": ["test/unit/test_mutants_frames.py",
                           "test/unit/test_frames.py",
                           "test/unit/test_task_space.py"],
    "dynamics/api.py": ["test/unit/test_mutants_api.py",
                        "test/unit/test_dynamics_api.py",
                        "test/unit/test_dynamics_input_edges.py",
                        "test/unit/test_mutants_closed_chain.py",
                        "test/unit/test_dynamics_floating.py::"
                        "test_neutral_and_integrate_against_pinocchio",
                        "test/unit/test_dynamics_mimic.py::"
                        "test_mimic_composes_with_floating_base"],
    "dynamics/velocity_representation.py": ["test/unit/test_mutants_velocity_representation.py",
                                            "test/unit/test_dynamics_velocity_representation.py",
                                            "test/unit/test_regressor_batch.py::"
                                            "test_batch_rows_equal_single_calls_bitwise"],
    "dynamics/batch.py": ["test/unit/test_mutants_batch.py", "test/unit/test_dynamics_batch.py",
                          "test/unit/test_regressor_batch.py",
                          "test/unit/test_dynamics_mimic.py::"
                          "test_batches_of_a_coupled_model_equal_its_single_state_calls_bitwise",
                          "test/unit/test_dynamics_loops.py::test_batches_equal_single_calls",
                          "test/unit/test_dynamics_velocity_representation.py::"
                          "test_integrate_batches_and_clone_keep_the_representation",
                          "test/unit/test_follower_bounds.py"],
    "dynamics/kernel_table.py": ["test/unit/test_mutants_kernel_table.py",
                                 "test/unit/test_kernel_dispatch.py",
                                 "test/unit/test_dynamics_api.py"],
    "dynamics/factorizations.py": ["test/unit/test_mutants_factorizations.py",
                                   "test/unit/test_factorizations.py::"
                                   "test_admissible_factorizations_are_skew_with_the_same_dynamics",
                                   "test/unit/test_factorizations.py::"
                                   "test_the_family_has_dimension_n_choose_3",
                                   "test/unit/test_factorizations.py::"
                                   "test_inadmissible_contorsions_break_one_property",
                                   "test/unit/test_factorizations.py::"
                                   "test_point_mass_cross_product_factorization",
                                   "test/unit/test_factorizations.py::"
                                   "test_factorization_inputs_refused",
                                   "test/unit/test_plain_numbers.py::test_contorsion_indices"],
    "dynamics/armature.py": ["test/unit/test_mutants_armature.py"] + [ARMATURE + name for name in (
        "test_an_unknown_rotor_model_is_refused_naming_the_choices",
        "test_a_balanced_rotor_within_round_off_is_accepted_both_sides_of_the_bounds",
        "test_coupled_bodies_that_are_not_rotors_are_refused_naming_them",
        "test_no_rotors_leaves_the_model_alone",
        "test_a_single_joint_with_a_rotor_is_exact",
        "test_armature_equals_the_exact_rotors_when_no_parent_turns_about_the_rotor_axis",
        "test_where_a_parent_turns_about_the_axis_the_difference_is_the_dropped_energy",
        "test_pinocchio_armature_is_what_the_reference_assumes",
        "test_arm7_rotors_urdf_as_armature_matches_pinocchio",
        "test_datasheet_rotors_as_armature_match_pinocchio",
        "test_quadruped_with_armature_matches_pinocchio",
        "test_the_armature_model_keeps_the_tree_and_its_services",
    )],
    "dynamics/adaptive.py": ["test/unit/test_mutants_adaptive.py"] + [
        "test/unit/test_adaptive.py::" + name for name in (
        "test_refused_inputs",
        "test_one_tick_is_the_formula",
        "test_track_reference_is_slotine_li",
        "test_projection_is_the_nearest_point_in_the_metric",
        "test_projection_keeps_every_body_physical",
        "test_ticks_allocate_no_numpy_memory",
        )
    ],
    "dynamics/api_frames.py": ["test/unit/test_frames.py", "test/unit/test_task_space.py"],
    "dynamics/api_batches.py": ["test/unit/test_mutants_api_batches.py",
                                "test/unit/test_dynamics_batch.py"],
    # every mutant of model.py changes the kernels' cache key (numba_cache.sources_digest):
    # the kernels these tests call are compiled again for each one (about a minute)
    "dynamics/model.py": ["test/unit/test_mutants_model.py",
                          "test/unit/test_dynamics_floating.py",
                          "test/unit/test_dynamics_pinocchio.py::"
                          "test_paper_topologies_match_pinocchio",
                          "test/unit/test_frames.py::test_every_frame_matches_pinocchio"],
    "dynamics/parameters.py": ["test/unit/test_mutants_parameters.py", *PARAMETER_TESTS],
    "dynamics/api_parameters.py": ["test/unit/test_mutants_api_parameters.py",
                                   "test/unit/test_mutants_parameters.py",
                                   REGRESSOR + "test_regressor_input_validation_names_the_argument",
                                   REGRESSOR + "test_regressor_out_buffers",
                                   REGRESSOR + "test_energy_regressor",
                                   REGRESSOR + "test_closed_loops_have_parameters_but_no_regressor",
                                   "test/unit/test_regressor_batch.py"],
    "dynamics/urdf_model.py": ["test/unit/test_mutants_urdf_model.py",
                               "test/unit/test_mutants_model.py",
                               "test/unit/test_dynamics_urdf_errors.py",
                               "test/unit/test_dynamics_input_edges.py",
                               "test/unit/test_dynamics_floating.py",
                               "test/unit/test_dynamics_locked.py",
                               "test/unit/test_dynamics_pinocchio.py::"
                               "test_paper_topologies_match_pinocchio",
                               "test/unit/test_frames.py::test_every_frame_matches_pinocchio"],
    "dynamics/identification.py": ["test/unit/test_mutants_identification.py",
                                   "test/unit/test_identification_range.py",
                                   "test/unit/test_plain_numbers.py::"
                                   "test_identify_stamps_and_integers"] + [
        "test/unit/test_identification.py::" + name for name in (
        "test_bad_input_is_refused_by_name",
        "test_exact_data_give_the_torques_of_the_truth",
        "test_accelerations_by_central_differences",
        "test_window_smooths_both_sides",
        "test_prior_defaults_to_the_models_parameters",
        "test_identifiability_agrees_with_pinocchio",
        "test_noisy_data_plain_least_squares_inconsistent_identify_not",
        "test_closed_loop_model_is_refused",
        )
    ],
    # the plain-numpy oracle: its own checks (identities, finite differences, Pinocchio),
    # seed 0 of one case per kind of root and topology (every case runs the same code)
    "dynamics/reference.py": ["test/unit/test_mutants_reference.py"] + [
        "test/unit/test_dynamics_reference.py::" + name for name in (
        "test_body_factor_is_admissible",
        "test_mimic_model_rejected",
        *(f"{test}[{case}-0]" for test in (
            "test_mdot_is_c_plus_ct", "test_c_from_gamma", "test_mdot_finite_differences",
            "test_coriolis_matches_library", "test_christoffel_matches_library")
          for case in ("binary_tree_9", "quadruped12_floating", "binary_tree_6_planar")),
        "test_christoffel_first_kind_finite_differences[binary_tree_9]",
        "test_floating_christoffel_not_symmetric_in_the_free_flyer",
        )
    ] + ["test/unit/test_dynamics_christoffel_differentiation.py::" + name for name in (
        "test_structure_constants_are_the_se3_commutator",
        "test_reference_rnea_is_pinocchios[binary_tree-9]",
        "test_reference_rnea_is_pinocchios[quadruped-13-floating]",
        "test_reference_rnea_is_pinocchios[anymal_c-planar]",
        "test_gamma_by_differentiation_on_mimic_joints",
        "test_gamma_by_differentiation_equals_algorithm_2[binary_tree-9]",
        "test_gamma_by_differentiation_equals_algorithm_2[quadruped-13-floating]",
        "test_gamma_by_differentiation_equals_algorithm_2[anymal_c-planar]",
        "test_gamma_by_differentiation_after_a_parameter_change[floating]",
        "test_gamma_by_differentiation_on_the_arm_with_rotors[floating]",
        )
    ],
    "dynamics/xacro_files.py": ["test/unit/test_mutants_xacro_files.py", "test/unit/test_xacro.py"],
    # the import-graph tests compile arm7's kernels in a fresh process and cache
    "dynamics/numba_cache.py": ["test/unit/test_mutants_numba_cache.py",
                                "test/packaging/test_import_graph.py::"
                                "test_importing_the_library_has_no_side_effects",
                                "test/packaging/test_import_graph.py::"
                                "test_the_cache_directory_is_chosen_by_the_first_compile",
                                "test/packaging/test_import_graph.py::"
                                "test_a_coupled_model_compiled_first_leaves_the_tree_kernels_it_calls_cached"],
}  # fmt: skip

# The Numba kernels (dynamics/kernels/): a mutant changes the kernels' source digest, so each
# test run compiles every kernel it loads afresh, in a cache directory of its own that is
# removed afterwards (numba_cache keys the cache on a hash of all kernel sources): about ten
# seconds a mutant for the tree's kernels, a minute and a half for the closed chains'. Too
# slow for every mutant (some eight thousand): run with --sample, a random fraction of each
# module's mutants (seeded, so --survivors finds the same sample again). The tests are the
# independent oracles of each kernel (Pinocchio, finite differences, identities).
_ORACLES = [
    "test/unit/test_dynamics_pinocchio.py",
    "test/unit/test_dynamics_random_trees.py",
    "test/unit/test_dynamics_christoffel.py",
]
_LOOPS = [
    "test/unit/test_dynamics_loops.py",
    "test/unit/test_dynamics_loop_chord.py",
    "test/unit/test_dynamics_loop_neutral.py",
]
_FRAMES = ["test/unit/test_frames.py", "test/unit/test_task_space.py"]
_K = "dynamics/kernels/"
KERNEL_TARGETS = {
    # the helpers every kernel uses: multi-DoF joints, J x (Slotine-Li's), frames too
    **{_K + m: [*_ORACLES, "test/unit/test_dynamics_floating.py",
                "test/unit/test_dynamics_slotine_li.py", "test/unit/test_frames.py"]
       for m in ("spatial.py", "kinematics.py")},
    **{_K + m: _ORACLES for m in ("crba.py", "rnea.py")},
    # Algorithms 1 and 2 also run on multi-DoF joints, folded rotors' clusters, SIMD lanes
    **{_K + m: [*_ORACLES, "test/unit/test_dynamics_floating.py",
                "test/unit/test_dynamics_rotors.py", "test/unit/test_dynamics_mimic.py",
                "test/unit/test_dynamics_lanes.py"]
       for m in ("coriolis_matrix.py", "christoffel.py")},
    # trig's and the Coriolis products' lists are one (an unmutated run each costs a cold
    # compile of minutes): sincos's own test first, then the products' API
    **{_K + m: ["test/unit/test_kernels_trig.py", "test/unit/test_dynamics_api.py", *_ORACLES]
       for m in ("trig.py", "coriolis_vectors.py", "coriolis_times.py")},
    _K + "safeea.py": ["test/unit/test_dynamics_safeea.py"],
    _K + "coordinate_change.py": ["test/unit/test_dynamics_mimic.py",
                                  "test/unit/test_dynamics_rotors.py",
                                  "test/unit/test_dynamics_locked.py",
                                  "test/unit/test_dynamics_safeea.py",
                                  "test/unit/test_follower_bounds.py"],
    _K + "base_change.py": ["test/unit/test_dynamics_velocity_representation.py",
                            "test/unit/test_dynamics_floating.py"],
    **{_K + m: ["test/unit/test_dynamics_batch.py", "test/unit/test_dynamics_lanes.py",
                "test/unit/test_dynamics_streaming.py"]
       for m in ("batch.py", "lanes.py", "streaming.py")},
    _K + "adaptive.py": ["test/unit/test_adaptive.py"],
    **{_K + m: ["test/unit/test_dynamics_regressor.py", "test/unit/test_regressor_batch.py"]
       for m in ("regressor.py", "parameters.py")},
    **{_K + m: _FRAMES for m in ("frame_jacobian.py", "frame_jacobian_dot.py",
                                 "frame_bias.py", "task_space.py", "ltl.py")},
    # the wrench kernel's own tests (test_task_space.py) first
    _K + "wrench.py": ["test/unit/test_task_space.py",
                       "test/unit/test_dynamics_velocity_representation.py",
                       "test/unit/test_frames.py"],
    _K + "momentum_observer.py": ["test/unit/test_momentum_observer.py"],
    _K + "slotine_li.py": ["test/unit/test_dynamics_slotine_li.py"],
    # Newton's and the QR's bounds (step budget, tolerance, dead point) are test_mutants_loops'
    _K + "loop_closure.py": [*_LOOPS, "test/unit/test_mutants_loops.py",
                             "test/unit/test_mutants_loop_closure.py"],
    _K + "closed_entry.py": _LOOPS,
    _K + "closed_reduction.py": ["test/unit/test_mutants_closed_reduction.py", *_LOOPS],
    _K + "views.py": ["test/unit/test_kernel_views.py", *_LOOPS],
}  # fmt: skip

_COMPARE = {
    ast.Lt: [ast.LtE, ast.NotEq], ast.LtE: [ast.Lt], ast.Gt: [ast.GtE, ast.NotEq],
    ast.GtE: [ast.Gt], ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Is: [ast.IsNot],
    ast.IsNot: [ast.Is], ast.In: [ast.NotIn], ast.NotIn: [ast.In],
}  # fmt: skip
_BINARY = {
    ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult],
    ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv], ast.BitAnd: [ast.BitOr],
    ast.BitOr: [ast.BitAnd],
}  # fmt: skip


def _docstrings(tree) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _annotations(tree) -> set[int]:
    """Nodes inside type annotations (never evaluated: ``from __future__ import annotations``)."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots.append(node.returns)
        elif isinstance(node, ast.arg):
            roots.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots if root is not None for n in ast.walk(root)}


def sites(tree, source_lines) -> list[tuple]:
    """[(walk index, kind, detail, line)] of every mutation in ``tree``."""
    skip = _docstrings(tree) | _annotations(tree)
    out = []
    for k, node in enumerate(ast.walk(tree)):
        line = getattr(node, "lineno", 0)
        if id(node) in skip or (line and "pragma: no mutate" in source_lines[line - 1]):
            continue
        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                for new in _COMPARE.get(type(op), []):
                    out.append((k, "compare", (j, new), line))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            for new in _BINARY.get(type(node.op), []):
                out.append((k, "binary", new, line))
        elif isinstance(node, ast.BoolOp):
            out.append((k, "boolop", ast.Or if isinstance(node.op, ast.And) else ast.And, line))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((k, "not", None, line))
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                out.append((k, "const", not value, line))
            elif isinstance(value, int):
                out.append((k, "const", value + 1, line))
            elif isinstance(value, float):
                out.append((k, "const", 1.0 if value == 0.0 else 2.0 * value, line))
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                out.append((k, "return", None, line))
    return out


def mutate(tree, site) -> str:
    """The source of ``tree`` with one mutation applied (``tree`` itself is not changed)."""
    index, kind, detail, _ = site
    tree = copy.deepcopy(tree)
    node = next(n for k, n in enumerate(ast.walk(tree)) if k == index)
    if kind == "compare":
        j, new = detail
        node.ops[j] = new()
    elif kind == "binary":
        node.op = detail()
    elif kind == "boolop":
        node.op = detail()
    elif kind == "not":
        parent = _parent(tree, node)  # `not x` -> `x`
        for field, value in ast.iter_fields(parent):
            if value is node:
                setattr(parent, field, node.operand)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if item is node:
                        value[i] = node.operand
    elif kind == "const":
        node.value = detail
    elif kind == "return":
        node.value = ast.Constant(None)
    return ast.unparse(ast.fix_missing_locations(tree))


def _parent(tree, child):
    for node in ast.walk(tree):
        for value in ast.iter_child_nodes(node):
            if value is child:
                return node
    raise LookupError("no parent")


def what(site) -> str:
    """The mutation in words, e.g. ``comparison -> GtE``."""
    _, kind, detail, _ = site
    if kind == "compare":
        return f"comparison -> {detail[1].__name__}"
    if kind == "binary":
        return f"operator -> {detail.__name__}"
    if kind == "boolop":
        return f"-> {detail.__name__}"
    if kind == "const":
        return f"constant -> {detail!r}"
    return {"not": "`not` removed", "return": "returns None"}[kind]


def where(site, tree) -> str:
    """``line:column`` of the mutated node."""
    node = next(n for k, n in enumerate(ast.walk(tree)) if k == site[0])
    return f"{site[3]}:{getattr(node, 'col_offset', 0)}"


def describe(site, source_lines, tree) -> str:
    line = site[3]
    text = source_lines[line - 1].strip() if line else ""
    return f"line {where(site, tree)}: {what(site)}: {text[:90]}"


def read_equivalents(path: Path) -> dict[tuple[str, str, str], str]:
    """{(module, line:column, mutation): reason} from ``path`` ('#' starts a comment)."""
    out = {}
    if not path.exists():
        return out
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        fields = [f.strip() for f in text.split("|", 3)]
        if len(fields) != 4 or not all(fields):
            raise SystemExit(f"{path}:{n}: expected 'module | line:column | mutation | reason'")
        out[tuple(fields[:3])] = fields[3]
    return out


def stale_equivalents(equivalents: dict) -> list[str]:
    """The entries of ``equivalents`` that name no target or no mutant of its source now."""
    keys: dict[str, set] = {}
    stale = []
    for module, at, mutation in equivalents:
        if module not in keys:
            path = ROOT / "coriolis_ros" / module
            if module not in {**TARGETS, **KERNEL_TARGETS} or not path.exists():
                stale.append(f"{module}: not a target")
                keys[module] = set()
                continue
            source = path.read_text()
            tree = ast.parse(source)
            keys[module] = {(where(s, tree), what(s)) for s in sites(tree, source.splitlines())}
        if (at, mutation) not in keys[module]:
            stale.append(f"{module}: no mutant {mutation} at {at}")
    return stale


def installed(module: str) -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    return site / "coriolis_ros" / module


def run_tests(tests, timeout: float, fresh_cache: bool = False) -> tuple[bool, float]:
    """(tests passed, seconds). ``fresh_cache``: Numba's cache in a new directory, removed
    afterwards (a kernel's mutant must not be read from, nor left in, the user's cache)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    start = time.monotonic()
    cmd = [str(Path(sys.executable).with_name("pytest")), "-x", "-q", "-p", "no:cacheprovider",
           *tests]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mutation-numba-") as cache:
        if fresh_cache:
            env["NUMBA_CACHE_DIR"] = cache
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout)
            passed = proc.returncode == 0
        except subprocess.TimeoutExpired:
            passed = False  # an endless loop: killed
    return passed, time.monotonic() - start


def sample(found: list, fraction: float | None, seed: int) -> list:
    """A random share ``fraction`` of the sites (at least one), in source order; all if None.
    The same sites for the same source, fraction and seed."""
    if fraction is None or not found:
        return found
    count = max(1, math.ceil(fraction * len(found)))
    picked = random.Random(seed).sample(range(len(found)), min(count, len(found)))
    return [found[i] for i in sorted(picked)]


def run_module(
    module: str,
    tests: list,
    limit: int | None,
    log,
    equivalents=None,
    previous=None,
    fraction: float | None = None,
    seed: int = 0,
    baselines: dict | None = None,
) -> dict:
    """``baselines``: {tests: (seconds, module)} of the unmutated runs so far; a module whose
    tests were already run unmutated in this invocation reuses that run (the unmutated package
    is the same code: one cold compile less per module sharing a kernel test list)."""
    target = installed(module)
    source = (ROOT / "coriolis_ros" / module).read_text()
    if target.read_text() != source:
        raise SystemExit(f"{target} differs from the source tree: run `make install` first")
    lines = source.splitlines()
    tree = ast.parse(source)
    found = sites(tree, lines)
    sites_all = len(found)
    found = sample(found, fraction, seed)
    if limit is not None:
        found = found[:limit]
    sampled = len(found)
    kernel = module.startswith(_K)
    earlier = 0  # killed in the previous run (--survivors)
    if previous is not None:
        if previous["mutants"] != len(found):
            raise SystemExit(
                f"{module}: the previous report has another source ({previous['mutants']} mutants)"
            )
        found = [site for site in found if describe(site, lines, tree) in previous["survived"]]
        earlier = previous["killed"]
    tests = [t for t in tests if (ROOT / t.split("::")[0]).exists()]  # a file or a test in one
    original = target.read_bytes()
    target.write_text(ast.unparse(tree))  # the baseline: the unparsed original must pass
    try:
        key = (tuple(tests), kernel)
        seen = None if baselines is None else baselines.get(key)
        if seen is None:
            ok, seconds = run_tests(tests, 1800, kernel)
            if not ok:
                raise SystemExit(f"{module}: the tests fail on the unmutated module")
            if baselines is not None:
                baselines[key] = (seconds, module)
            timed = ""
        else:
            seconds, timed = seen[0], f" (run for {seen[1]})"
        timeout = max(30.0, 3 * seconds)
        again = f" (the survivors of {previous['mutants']})" if previous else ""
        of = f" (a sample of the {sites_all}, seed {seed})" if sampled < sites_all else ""
        log(f"{module}: {len(found)} mutants{of}{again}, tests {seconds:.1f} s unmutated{timed}")
        equivalents = {k[1:]: v for k, v in (equivalents or {}).items() if k[0] == module}
        killed, survived, equivalent, listed_killed = earlier, [], [], []
        for n, site in enumerate(found, 1):
            target.write_text(mutate(tree, site))
            passed, _ = run_tests(tests, timeout, kernel)
            key = (where(site, tree), what(site))
            if passed:
                survived.append(describe(site, lines, tree))
                reason = equivalents.get(key)
                if reason is None:
                    log(f"  [{n}/{len(found)}] SURVIVED {survived[-1]}")
                else:
                    equivalent.append(f"{survived[-1]} -- equivalent: {reason}")
                    log(f"  [{n}/{len(found)}] survived, equivalent: {survived[-1]}")
            else:
                killed += 1
                if key in equivalents:
                    listed_killed.append(describe(site, lines, tree))
    finally:
        target.write_bytes(original)
    for text in listed_killed:
        log(f"  equivalents list: KILLED, not equivalent: {text}")
    total = killed + len(survived)
    score = killed / total if total else 1.0
    log(f"{module}: killed {killed} of {total} ({100 * score:.1f} %)")
    rest = total - len(equivalent)
    score_rest = killed / rest if rest else 1.0
    if equivalent:
        log(f"{module}: {len(equivalent)} survivor(s) equivalent; killed {killed} of {rest} "
            f"others ({100 * score_rest:.1f} %)")  # fmt: skip
    return {"mutants": total, "killed": killed, "score": score, "survived": survived,
            "equivalent": equivalent, "score_excluding_equivalent": score_rest,
            "sites": sites_all, "sample": fraction, "seed": seed}  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", help="e.g. stream/joint_state_buffer.py")
    parser.add_argument("--tests", nargs="+", help="test files (default: the module's)")
    parser.add_argument("--max", type=int, help="at most this many mutants per module")
    parser.add_argument("--report", default="mutation-report.json")
    parser.add_argument(
        "--equivalents",
        default=str(ROOT / EQUIVALENTS),
        help="the equivalent mutants' list (module | line:column | mutation | reason)",
    )
    parser.add_argument(
        "--survivors",
        help="a previous --report of the same source: run only its survivors (tests were "
        "added since, the module is unchanged: a killed mutant stays killed)",
    )
    parser.add_argument(
        "--kernels",
        action="store_true",
        help="the Numba kernels' modules (dynamics/kernels/) instead of the Python ones",
    )
    parser.add_argument(
        "--sample",
        type=float,
        help="run a random fraction of each module's mutants (0 < F <= 1; --seed)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    # Interrupted (Ctrl-C, or SIGTERM from a job control): unwind, so `finally` puts the
    # original module back (signals ignored by a background shell are taken back too).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    if args.sample is not None and not 0.0 < args.sample <= 1.0:
        parser.error(f"--sample must be in (0, 1], got {args.sample}")
    known = {**TARGETS, **KERNEL_TARGETS}
    modules = args.module or list(KERNEL_TARGETS if args.kernels else TARGETS)
    if args.list:
        for module in modules:
            print(module, " ".join(known.get(module, [])))
        return 0

    def log(text):
        print(text, flush=True)

    equivalents = read_equivalents(Path(args.equivalents))
    for text in stale_equivalents(equivalents):
        log(f"equivalents list, stale entry: {text}")
    report = {}
    baselines: dict = {}
    for module in modules:
        tests = args.tests or known.get(module)
        if not tests:
            raise SystemExit(f"no tests known for {module}: pass --tests")
        previous = None
        if args.survivors:
            previous = json.loads(Path(args.survivors).read_text()).get(module)
            if previous is None:
                raise SystemExit(f"{args.survivors} has no run of {module}")
        report[module] = run_module(
            module, tests, args.max, log, equivalents, previous, args.sample, args.seed, baselines
        )
        Path(args.report).write_text(json.dumps(report, indent=1))
    killed = sum(r["killed"] for r in report.values())
    total = sum(r["mutants"] for r in report.values())
    log(f"total: killed {killed} of {total} ({100 * killed / max(total, 1):.1f} %)")
    same = sum(len(r["equivalent"]) for r in report.values())
    if same:
        rest = max(total - same, 1)
        log(
            f"total without the {same} equivalent: killed {killed} of {total - same} "
            f"({100 * killed / rest:.1f} %)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
