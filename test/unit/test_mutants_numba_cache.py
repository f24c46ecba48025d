"""dynamics.numba_cache: where the compiled kernels go, as its docstring says.

``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/coriolis_ros/numba`` (default
``~/.cache/coriolis_ros/numba``), else a per-user temporary directory, each in a subdirectory
named after a hash of the kernels' sources (model.py and kernels/*.py, nothing else); chosen
once per process. Each test gives the module a fresh choice and puts Numba's setting back.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import string
import tempfile
from pathlib import Path

import pytest
from numba.core import config as numba_config

from coriolis_ros.dynamics import numba_cache


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No directory chosen yet; Numba's setting, the environment and tempdir restored after."""
    monkeypatch.setattr(numba_cache, "_CHOSEN", [])
    monkeypatch.setattr(numba_config, "CACHE_DIR", numba_config.CACHE_DIR)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("USER", "someone")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


def test_the_digest_is_16_hex_digits():
    digest = numba_cache.sources_digest()
    assert len(digest) == 16 and set(digest) <= set(string.hexdigits.lower())


def test_numba_cache_dir_wins(fresh, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(fresh / "mine"))
    expected = str(fresh / "mine" / ("coriolis_ros-" + numba_cache.sources_digest()))
    assert numba_cache.configure() == expected
    assert numba_config.CACHE_DIR == expected
    assert numba_cache.cache_dir() == expected


def test_the_user_cache_comes_next_and_is_chosen_once(fresh, monkeypatch):
    digest = numba_cache.sources_digest()
    expected = str(fresh / "xdg" / "coriolis_ros" / "numba" / digest)
    assert numba_cache.configure() == expected
    assert Path(expected).is_dir() and numba_config.CACHE_DIR == expected
    # chosen once: a later change of the environment does not move it
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(fresh / "later"))
    assert numba_cache.configure() == expected
    assert numba_cache.cache_dir() == expected


def test_an_existing_directory_is_taken_again(fresh):
    digest = numba_cache.sources_digest()
    expected = fresh / "xdg" / "coriolis_ros" / "numba" / digest
    expected.mkdir(parents=True)
    assert numba_cache.configure() == str(expected)


def test_without_xdg_the_home_cache(fresh, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(fresh / "home"))
    first = next(numba_cache._candidates())
    assert first == str(fresh / "home" / ".cache" / "coriolis_ros" / "numba")


def test_a_blocked_user_cache_falls_back_to_a_per_user_temporary_directory(fresh, monkeypatch):
    (fresh / "xdg").write_text("a file, not a directory")  # makedirs below it fails
    digest = numba_cache.sources_digest()
    expected = str(fresh / "tmp" / "coriolis_ros-someone" / "numba" / digest)
    assert numba_cache.configure() == expected
    assert numba_config.CACHE_DIR == expected


def test_without_user_the_temporary_directory_is_named_by_uid(fresh, monkeypatch):
    monkeypatch.delenv("USER")
    second = list(numba_cache._candidates())[1]
    assert second == str(fresh / "tmp" / f"coriolis_ros-{os.getuid()}" / "numba")


def test_nothing_writable_leaves_numba_alone(fresh):
    (fresh / "xdg").write_text("blocked")
    shutil.rmtree(fresh / "tmp")
    (fresh / "tmp").write_text("blocked too")
    before = numba_config.CACHE_DIR
    assert numba_cache.configure() == ""
    assert numba_config.CACHE_DIR == before
    assert numba_cache.cache_dir() == ""


def _copy_of_the_module(tmp_path: Path):
    """numba_cache loaded from a copy of the dynamics package's files (its digest reads
    the files beside it), and that directory."""
    here = Path(numba_cache.__file__).resolve().parent
    root = tmp_path / "pkg"
    (root / "kernels").mkdir(parents=True)
    for name in ("model.py", "numba_cache.py", "api.py"):
        shutil.copy(here / name, root / name)
    for path in (here / "kernels").glob("*.py"):
        shutil.copy(path, root / "kernels" / path.name)
    spec = importlib.util.spec_from_file_location("copied_numba_cache", root / "numba_cache.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, root


def test_the_digest_follows_model_py_and_the_kernels_only(tmp_path):
    module, root = _copy_of_the_module(tmp_path)
    digest = module.sources_digest()
    assert digest == numba_cache.sources_digest()  # same files, same digest
    with open(root / "api.py", "a") as f:
        f.write("\n# not read by the kernels\n")
    assert module.sources_digest() == digest
    with open(root / "model.py", "a") as f:
        f.write("\n# a change\n")
    changed = module.sources_digest()
    assert changed != digest
    kernel = sorted((root / "kernels").glob("*.py"))[-1]
    with open(kernel, "a") as f:
        f.write("\n# a change\n")
    assert module.sources_digest() not in (digest, changed)
