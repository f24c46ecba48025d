"""The bag tool's results as a Parquet file (pyarrow, the ``parquet`` extra), and back.

One table row per joint state; the column names are the ``CoriolisState`` field names (the
same keys as the ``.npz``):

- ``header.stamp`` and ``log_time``: int64 nanoseconds;
- per-joint vectors (``position``, ``velocity``, ``coriolis_force``, ``effort``, ...):
  ``fixed_size_list<double>[n]``;
- matrices (``coriolis_matrix``, ``mass_matrix``, ``mass_matrix_derivative``):
  ``fixed_size_list<double>[n * n]``, row-major: the message's layout.

- the task-space terms (``coriolis-ros bag --task-frame``, :mod:`.bag_task_space`):
  ``fixed_size_list<double>`` of the per-row shape's size (m * m, m * n, 16), row-major.

``joint_names`` is the same for every row, so it is stored once, in the schema's metadata
(key ``coriolis_ros.joint_names``, a JSON list), with the matrix columns
(``coriolis_ros.matrix_fields``), every multi-dimensional column's per-row shape
(``coriolis_ros.shapes``, JSON: column -> shape), for a floating or planar base
``position_names`` (``coriolis_ros.position_names``: ``position`` then has one entry per
coordinate) and the task space's once-per-file keys (``coriolis_ros.constants``, JSON: key ->
dtype, shape and value).  pandas reads the file as it is (``pd.read_parquet``: one array per
cell); :func:`read_parquet` gives back the ``.npz``'s arrays, bitwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .bag_task_space import CONSTANT_KEYS

SUFFIX = ".parquet"
NAMES_KEY = b"coriolis_ros.joint_names"
MATRICES_KEY = b"coriolis_ros.matrix_fields"
POSITION_NAMES_KEY = b"coriolis_ros.position_names"
SHAPES_KEY = b"coriolis_ros.shapes"
CONSTANTS_KEY = b"coriolis_ros.constants"
NAME_LISTS = {"joint_names": NAMES_KEY, "position_names": POSITION_NAMES_KEY}


class ParquetUnavailable(ImportError):
    """pyarrow is not installed."""


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ParquetUnavailable(
            "Parquet output needs pyarrow: pip install coriolis_ros[parquet]"
        ) from exc
    return pa, pq


def available() -> bool:
    try:
        _pyarrow()
    except ParquetUnavailable:
        return False
    return True


def write_parquet(path: str | os.PathLike, arrays: dict) -> None:
    """Write the bag tool's arrays (``offline.bag.result_arrays``) to ``path``, atomically."""
    pa, pq = _pyarrow()
    path = Path(path)
    metadata = {}
    for key, meta_key in NAME_LISTS.items():
        if key in arrays:
            metadata[meta_key] = json.dumps([str(x) for x in arrays[key]]).encode()
    constants = {}
    for key in CONSTANT_KEYS:
        if key in arrays:
            value = np.asarray(arrays[key])
            constants[key] = {
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "value": value.tolist(),
            }
    if constants:
        metadata[CONSTANTS_KEY] = json.dumps(constants).encode()
    columns, fields, matrices, shapes = [], [], [], {}
    for key, value in arrays.items():
        if key in NAME_LISTS or key in constants:
            continue
        value = np.ascontiguousarray(value)
        if value.ndim == 1:
            columns.append(pa.array(value))
        else:
            T = value.shape[0]
            width = int(np.prod(value.shape[1:]))
            flat = pa.array(value.reshape(T * width))
            columns.append(pa.FixedSizeListArray.from_arrays(flat, width))
            if value.ndim == 3:
                matrices.append(key)
            if value.ndim >= 3:
                shapes[key] = list(value.shape[1:])
        fields.append(key)
    metadata[MATRICES_KEY] = json.dumps(matrices).encode()
    metadata[SHAPES_KEY] = json.dumps(shapes).encode()
    table = pa.Table.from_arrays(columns, names=fields).replace_schema_metadata(metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_parquet(path: str | os.PathLike) -> dict:
    """The arrays :func:`write_parquet` wrote: vectors (T, n), matrices (T, n, n)."""
    pa, pq = _pyarrow()
    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    if NAMES_KEY not in meta:
        raise ValueError(f"{path}: not a coriolis-ros bag result (no {NAMES_KEY.decode()})")
    names = json.loads(meta[NAMES_KEY])
    matrices = set(json.loads(meta.get(MATRICES_KEY, b"[]")))
    shapes = json.loads(meta.get(SHAPES_KEY, b"{}"))
    n = len(names)
    out: dict = {"joint_names": np.array(names, dtype=str)}
    if POSITION_NAMES_KEY in meta:
        out["position_names"] = np.array(json.loads(meta[POSITION_NAMES_KEY]), dtype=str)
    for key, entry in json.loads(meta.get(CONSTANTS_KEY, b"{}")).items():
        out[key] = np.array(entry["value"], dtype=entry["dtype"]).reshape(entry["shape"])
    for key, column in zip(table.column_names, table.columns, strict=True):
        chunk = column.combine_chunks()
        if pa.types.is_fixed_size_list(chunk.type):
            values = chunk.flatten().to_numpy(zero_copy_only=False)
            width = chunk.type.list_size
            if key in shapes:
                shape = (len(chunk), *shapes[key])
            else:
                shape = (len(chunk), n, n) if key in matrices else (len(chunk), width)
            out[key] = np.ascontiguousarray(values.reshape(shape))
        else:
            out[key] = chunk.to_numpy(zero_copy_only=False)
    return out
