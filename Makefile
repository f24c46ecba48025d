# coriolis_ros developer entry points. All logic lives in scripts/ (bash).
#   make setup    create/reuse .venv (Python 3.11 + ROS 2 Kilted wheels) and install the package
#   make install  rebuild + install the current tree into .venv (incremental, ~1 s)
#   make test     setup if needed, install, ruff check, pytest on test/ against the installed copy
#   make test-fast  the unit tests not marked slow (test/unit, about 40 s; docs/testing.md)
#   make demo     setup if needed, install, run python -m coriolis_ros.demo
#   make demo-passivity  closed loop: the robot in MuJoCo, Slotine-Li, a push, the node's observer;
#                 writes docs/closed_loop.png and docs/closed_loop.json (DEMO_ARGS to change);
#                 then the adaptive controller from parameters 50 % wrong, no push, against
#                 Slotine-Li with fixed parameters: docs/closed_loop_adaptive.png and .json
#                 (ADAPTIVE_ARGS to change)
#   make run URDF=robot.urdf [ARGS='-p update_rate:=500.0']
#                 setup if needed, run the node on a URDF file (python -m coriolis_ros.node)
#   make bench    run bench/run_all.py when it exists
#   make mutation mutation testing of the stream and Python-level dynamics modules (scripts/
#                 mutation.py; long: MUTATION_ARGS='--module stream/mimic_check.py' for one;
#                 MUTATION_ARGS='--kernels --sample 0.015' for a sample of the Numba kernels);
#                 not part of make test. docs/testing.md has the scores.
#   make fuzz     the full fuzz budget (CORIOLIS_FUZZ=full test/unit/test_fuzz_stream.py)
#   make lint     ruff check
#   make clean    remove build trees (keeps .venv);  make distclean  also removes .venv
# Pass pytest arguments with PYTEST_ARGS, e.g. make test PYTEST_ARGS="test/packaging/test_install.py -x".

SHELL := /bin/bash
VENV := .venv
PYTEST_ARGS ?= test

export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST

DEMO_ARGS ?= --output docs/closed_loop.png --summary docs/closed_loop.json
ADAPTIVE_ARGS ?= --controller adaptive --parameter-error 0.5 --duration 6 \
	--push-start 1000 --push-end -1 \
	--output docs/closed_loop_adaptive.png --summary docs/closed_loop_adaptive.json

.PHONY: setup install test test-fast demo demo-passivity run run-args bench lint clean distclean \
	mutation fuzz

setup:
	scripts/setup.sh

install:
	scripts/install.sh

# The pytest console script (not `python -m pytest`) keeps the source tree off sys.path,
# so the tests import the installed coriolis_ros (with msg/srv), not ./coriolis_ros.
# test/conftest.py picks a unique ROS_DOMAIN_ID for the run.
test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# Only the files without the module-level slow mark are collected (collecting the others
# would import Pinocchio's, MuJoCo's and the node's heavier dependencies for nothing).
FAST_TESTS = $(shell grep -L '^pytestmark = pytest.mark.slow' test/unit/test_*.py)
test-fast: setup
	$(VENV)/bin/pytest -q $(FAST_TESTS)

demo: setup
	scripts/run.sh python -m coriolis_ros.demo

demo-passivity: setup
	@mkdir -p docs
	scripts/run.sh python -m coriolis_ros.demo.passivity $(DEMO_ARGS)
	scripts/run.sh python -m coriolis_ros.demo.passivity $(ADAPTIVE_ARGS)

# The node on a URDF file, in the venv. ROS_DOMAIN_ID: yours if set (set it to reach the node from
# another shell), else scripts/run.sh derives one from its pid.
run: run-args setup
	scripts/run.sh python -m coriolis_ros.node --ros-args -p robot_description_file:=$(abspath $(URDF)) $(ARGS)

run-args:
	@if [ -z "$(URDF)" ]; then echo "usage: make run URDF=path/to/robot.urdf [ARGS='-p name:=value ...']" >&2; exit 2; fi

bench: setup
	@if [ -f bench/run_all.py ]; then scripts/run.sh python bench/run_all.py; \
	else echo "bench/run_all.py does not exist yet: no benchmarks to run"; fi

# Mutants are written over the installed copy of each module, so install the tree first.
MUTATION_ARGS ?=
mutation: setup
	$(VENV)/bin/python scripts/mutation.py $(MUTATION_ARGS)

fuzz: setup
	CORIOLIS_FUZZ=full $(VENV)/bin/pytest -q -p no:cacheprovider test/unit/test_fuzz_stream.py

lint:
	scripts/setup.sh --venv-only
	$(VENV)/bin/ruff check .

clean:
	rm -rf build install log .pytest_cache .ruff_cache
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
