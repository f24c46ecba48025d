"""README.md as a newcomer follows it, and the docs it leads to.

* Every command line in the README's bash blocks is either run here, as written, in a shell
  prepared by ``source scripts/env.sh`` (the node started as the README says, from a
  robot.urdf in the working directory, then echoed, called and plotted), or listed in
  NOT_RUN_HERE with the test or the step that runs it. A new command without either fails.
* The README's Python block runs from the repository root in such a shell (which needs
  PYTHONSAFEPATH: the source tree must not shadow the installed package).
* Every relative link of README.md and docs/*.md resolves to a file of the repository (and a
  heading, for an anchor); the README stays within 200 lines; no issue numbers in the docs;
  docs/node.md lists every parameter of the node with its default.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))

# Command lines of the README not run by this file, and what runs them.
NOT_RUN_HERE = {
    "make setup": "CI's .ci/run (make test runs make setup first); test_install.py",
    "source scripts/env.sh": "every command below runs after it",
    "coriolis-ros bag run1/ -o run1.npz": "test_offline_bag.py (bags written by rosbags)",
    "make test": "CI's .ci/run, which is exactly this",
    "make test-fast": "test_test_layout.py checks the modules it collects",
    'make test PYTEST_ARGS="test/unit/test_cli.py -x"': "the Makefile passes PYTEST_ARGS to pytest",
}


def bash_commands(text: str) -> list[str]:
    """The command lines of the ```bash blocks: continuations joined, comments dropped."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(re.sub(r"\s+", " ", line))
    return out


def in_env_shell(command: str, env: dict, cwd: Path, timeout: float = 300.0, **kwargs):
    """``command`` in bash after ``source scripts/env.sh`` (the venv of this interpreter)."""
    env = {k: v for k, v in env.items() if k not in ("PYTHONSAFEPATH", "VIRTUAL_ENV")}
    env["CORIOLIS_VENV"] = sys.prefix
    script = f"source {REPO / 'scripts' / 'env.sh'} && cd {cwd} && {command}"
    return subprocess.run(["bash", "-c", script], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, **kwargs)  # fmt: skip


def test_the_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links or page.name != "README.md"
    for link in links:
        if re.match(r"^[a-z]+://", link) or link.startswith("mailto:"):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists() and REPO in path.parents, f"{page.name}: {link} does not resolve"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: no heading #{anchor} in {target}"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_no_issue_numbers_in_the_docs(page):
    assert not re.search(r"\bissues? \d+", page.read_text(), re.IGNORECASE)


def test_the_node_doc_lists_every_parameter_with_its_default():
    from coriolis_ros.node.params import PARAMETERS  # ROS-free

    text = (REPO / "docs" / "node.md").read_text()

    def yaml(value) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return f'"{value}"' if isinstance(value, str) else str(value)

    for p in PARAMETERS:
        assert f"| `{p.name}` | `{yaml(p.default)}` |" in text, p.name


def test_the_readme_commands_are_all_accounted_for():
    commands = bash_commands(README.read_text())
    run_here = set(WALK_COMMANDS)
    unknown = [c for c in commands if c not in run_here and c not in NOT_RUN_HERE]
    assert not unknown, f"README commands neither run by test_readme.py nor listed: {unknown}"
    stale = [c for c in (*run_here, *NOT_RUN_HERE) if c not in commands and c not in IN_THE_TEXT]
    assert not stale, f"listed here, gone from the README: {stale}"
    text = README.read_text()
    assert all(f"`{c}`" in text for c in IN_THE_TEXT)


def test_the_readme_python_block_runs_from_the_repository_root(ros_domain_env):
    _, env = ros_domain_env
    code = re.search(r"<!-- example: first-call -->\s*```python\n(.*?)```", README.read_text(),
                     re.DOTALL).group(1)  # fmt: skip
    r = in_env_shell(f"python -c {_quote(code)}", env, REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "joint1" in r.stdout, r.stdout


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


# The README's commands run by the walk below, in its order (the node's first).
NODE = "python -m coriolis_ros.node --ros-args -p robot_description_file:=robot.urdf"
TOOLS = [
    "coriolis-ros echo --once",
    "coriolis-ros echo /diagnostics --once",
    "coriolis-ros call compute_dynamics --joint-names joint1 joint2 joint3 joint4 joint5 joint6 "
    "joint7 --position 0 0.1 0.2 0.3 0.4 0.5 0.6 --velocity 1 1 1 1 1 1 1",
    "coriolis-ros call christoffel",
    "coriolis-ros plot -o state.png --duration 5",
]
OFFLINE = [
    "coriolis-ros compute robot.urdf --q 0 0.1 0.2 0.3 0.4 0.5 0.6 --format json",
    "coriolis-ros check robot.urdf",
    "xacro robot.urdf.xacro > robot.urdf",
]
WALK_COMMANDS = [NODE, *TOOLS, *OFFLINE]
# Named in the README's text rather than a block, and run by the walk too.
IN_THE_TEXT = ["make run URDF=robot.urdf", "xacro robot.urdf.xacro > robot.urdf"]


def test_walk_through_the_readme(ros_domain_env, tmp_path):
    """The node from robot.urdf as the README starts it, looked at with the README's tools;
    then `make run` and the offline commands in the same directory."""
    domain_id, env = ros_domain_env
    shutil.copy(REPO / "coriolis_ros" / "robots" / "arm7.urdf", tmp_path / "robot.urdf")
    from support.ros_helpers import Peer

    log = open(tmp_path / "node.log", "wb")  # noqa: SIM115 -- closed below
    env_node = {k: v for k, v in env.items() if k not in ("PYTHONSAFEPATH", "VIRTUAL_ENV")}
    env_node["CORIOLIS_VENV"] = sys.prefix
    node = subprocess.Popen(
        ["bash", "-c", f"source {REPO / 'scripts' / 'env.sh'} && exec {NODE}"],
        cwd=tmp_path, env=env_node, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 180
        while "ready: arm7" not in (tmp_path / "node.log").read_text():
            assert node.poll() is None, (tmp_path / "node.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "node.log").read_text()
            time.sleep(0.1)
        with Peer(domain_id) as peer:
            publisher = peer.joint_state_publisher()
            names = [f"joint{i}" for i in range(1, 8)]

            def publish():
                while not stop.is_set():
                    publisher.publish(peer.joint_state(names, np.zeros(7), np.ones(7)))
                    time.sleep(0.02)

            thread = threading.Thread(target=publish, daemon=True)
            thread.start()
            outputs = {}
            for command in TOOLS:
                r = in_env_shell(command, env, tmp_path)
                assert r.returncode == 0, (command, r.stdout, r.stderr)
                outputs[command] = r.stdout
            stop.set()
            thread.join(5)
    finally:
        stop.set()
        node.send_signal(2)
        try:
            assert node.wait(30) == 0, (tmp_path / "node.log").read_text()
        finally:
            log.close()
    assert "--- /coriolis_state" in outputs[TOOLS[0]] and "coriolis_matrix:" in outputs[TOOLS[0]]
    assert "/coriolis: dynamics" in outputs[TOOLS[1]]
    assert "success: True" in outputs[TOOLS[2]] and "gravity_force:" in outputs[TOOLS[2]]
    assert "symbols: Gamma[i]" in outputs[TOOLS[3]]
    assert (tmp_path / "state.png").read_bytes()[:4] == b"\x89PNG"

    # make run URDF=robot.urdf: the same node through make, stopped once it is ready.
    make = subprocess.Popen(
        ["make", "-C", str(REPO), "--no-print-directory", "run", f"URDF={tmp_path / 'robot.urdf'}"],
        env=env_node, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines = []
    for line in make.stdout:
        lines.append(line)
        if "ready: arm7" in line:
            break
    os.killpg(make.pid, signal.SIGINT)
    make.wait(30)
    assert any("ready: arm7" in line for line in lines), "".join(lines)

    # The offline commands, in the same directory.
    r = in_env_shell(OFFLINE[0], env, tmp_path)
    assert r.returncode == 0 and '"coriolis_matrix"' in r.stdout, r.stderr
    r = in_env_shell(OFFLINE[1], env, tmp_path)
    assert r.returncode == 0 and "all identities hold" in r.stdout, r.stdout + r.stderr
    (tmp_path / "robot.urdf.xacro").write_text(
        '<robot name="arm7" xmlns:xacro="http://www.ros.org/wiki/xacro">'
        '<xacro:include filename="$(find coriolis_ros)/urdf/arm7.urdf"/></robot>'
    )
    r = in_env_shell(OFFLINE[2], env, tmp_path)
    assert r.returncode == 0, r.stderr
    from coriolis_ros.dynamics import Dynamics

    assert Dynamics.from_urdf(str(tmp_path / "robot.urdf")).nv == 7
