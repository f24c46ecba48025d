"""dynamics.xacro_files: which paths are xacro, how xacro is run, and each way it fails.

xacro itself runs (it is in the venv) for the expansions; its failures that a file cannot
produce (no output with a zero exit, a timeout, an interpreter that cannot start) are made by
replacing ``subprocess.run`` for one call.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from coriolis_ros.dynamics import URDFError
from coriolis_ros.dynamics import xacro_files as X

XACRO = """<?xml version="1.0"?>
<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="m" default="0.5"/>
  <link name="a"><inertial><mass value="$(arg m)"/></inertial></link>
</robot>
"""


@pytest.mark.parametrize("path, expected", [
    ("robot.urdf.xacro", True), ("robot.xacro", True), ("  ROBOT.XACRO \n", True),
    (Path("dir/robot.urdf.xacro"), True), ("robot.urdf", False), ("xacro", False),
    ('<robot name="a.xacro"/> .xacro', False), ("  <robot/>.xacro", False),
    (b"robot.xacro", False), (None, False), (3, False),
])  # fmt: skip
def test_is_xacro_path(path, expected):
    assert X.is_xacro_path(path) is expected


def test_xacro_available_follows_find_spec(monkeypatch):
    assert X.xacro_available() is True
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert X.xacro_available() is False

    def broken(name):
        raise ValueError("xacro.__spec__ is None")

    monkeypatch.setattr(importlib.util, "find_spec", broken)
    assert X.xacro_available() is False


@pytest.fixture
def xacro_file(tmp_path):
    path = tmp_path / "r.urdf.xacro"
    path.write_text(XACRO)
    return path


def test_expansion_is_text_with_arguments(xacro_file):
    text = X.expand_xacro(xacro_file)
    assert isinstance(text, str)
    assert '<mass value="0.5"/>' in text
    assert '<mass value="2.25"/>' in X.expand_xacro(str(xacro_file), {"m": "2.25"})


def test_a_missing_file_and_a_missing_xacro_are_named(tmp_path, monkeypatch, xacro_file):
    missing = tmp_path / "none.xacro"
    with pytest.raises(URDFError, match=rf"^cannot read {missing}: no such file$"):
        X.expand_xacro(missing)
    monkeypatch.setattr(X, "xacro_available", lambda: False)
    with pytest.raises(URDFError, match=rf"^{xacro_file} is a xacro file and the xacro package "):
        X.expand_xacro(xacro_file)


def _fake_run(monkeypatch, result=None, error=None):
    seen = {}

    def run(cmd, **kwargs):
        seen["cmd"], seen["kwargs"] = cmd, kwargs
        if error is not None:
            raise error
        return result

    monkeypatch.setattr(subprocess, "run", run)
    return seen


def test_no_output_with_a_zero_exit_is_a_failure(monkeypatch, xacro_file):
    done = subprocess.CompletedProcess([], 0, stdout=" \n", stderr="")
    _fake_run(monkeypatch, done)
    with pytest.raises(URDFError, match=r"failed: exit status 0, no output$"):
        X.expand_xacro(xacro_file)


def test_a_nonzero_exit_with_output_is_a_failure_with_xacro_s_words(monkeypatch, xacro_file):
    done = subprocess.CompletedProcess([], 1, stdout="<robot/>", stderr="  bad\n   thing ")
    _fake_run(monkeypatch, done)
    with pytest.raises(URDFError, match=rf"^xacro {xacro_file} failed: bad thing$"):
        X.expand_xacro(xacro_file)


def test_a_timeout_and_an_unstartable_interpreter(monkeypatch, xacro_file):
    monkeypatch.setenv("PYTHONSTARTUP", "/nonexistent/startup.py")
    seen = _fake_run(monkeypatch, error=subprocess.TimeoutExpired("python", 120.0))
    with pytest.raises(URDFError, match=rf"^xacro {xacro_file}: no result after 120 s$"):
        X.expand_xacro(xacro_file)
    assert seen["kwargs"]["timeout"] == 120.0  # a big robot's includes take seconds, not minutes
    assert seen["kwargs"]["stdin"] is subprocess.DEVNULL
    assert "PYTHONSTARTUP" not in seen["kwargs"]["env"]
    _fake_run(monkeypatch, error=OSError("no interpreter"))
    with pytest.raises(URDFError, match=rf"^xacro {xacro_file}: cannot run it: no interpreter$"):
        X.expand_xacro(xacro_file)
