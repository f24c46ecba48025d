"""The offline functions under Dask distributed: a fleet's archive on a cluster, no new code.

``pip install coriolis_ros[distributed]`` (dask, distributed, rosbags).  Both functions take
a ``distributed.Client`` and submit *pure* functions: their results depend only on their
arguments (arrays, URDF text, file paths), never on the worker that runs them, so a
``LocalCluster`` on a laptop and a cluster of machines give the same arrays::

    from distributed import Client, LocalCluster
    from coriolis_ros.offline.distributed import bags_on_cluster, terms_on_cluster

    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
        results = bags_on_cluster(client, ["day1/bag_0", "day1/bag_1"], output_dir="out")
        terms = terms_on_cluster(client, urdf_text, Q, V, rows_per_task=50_000)

* :func:`bags_on_cluster` runs :func:`coriolis_ros.offline.bag.process_bag` once per bag
  (each worker must see the bag paths and the output directory, e.g. a shared file system);
  it returns the :class:`~coriolis_ros.offline.bag.BagResult` list in input order, a bad bag
  as a result with ``ok=False`` naming the file, like the local ``coriolis-ros bag``.
* :func:`terms_on_cluster` cuts (Q, V) into row blocks, computes every CoriolisState term
  of each block on a worker (:func:`coriolis_ros.offline.bag.compute_terms`) and
  concatenates: row for row, bitwise equal to the local batched calls, because each row's
  result does not depend on the rows computed with it.  A closed chain's rows do (each
  closes its loops from the one before): its rows go to one task, in order, from the
  model's neutral closure, bitwise equal to ``compute_terms`` on a new instance.
  ``model_options`` are :meth:`~coriolis_ros.dynamics.Dynamics.from_urdf`'s (rotors,
  rotor_model, independent_joints, ...), as ``coriolis-ros bag`` takes them.

Workers build the :class:`~coriolis_ros.dynamics.Dynamics` from the URDF text themselves
(cached per worker process) and load the compiled kernels from Numba's on-disk cache (or
compile them once per machine).
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np

from . import bag as _bag


@functools.lru_cache(maxsize=8)
def _dynamics(urdf: str, gravity: tuple[float, float, float], options: str):
    from coriolis_ros.dynamics import Dynamics

    # mimic joints follow, as in the bag reader; ``options``: from_urdf's keywords as JSON
    return Dynamics.from_urdf(urdf, gravity=gravity, **json.loads(options))


def _options_key(model_options) -> str:
    """from_urdf's keyword arguments as a canonical JSON text (the per-worker cache's key)."""
    try:
        return json.dumps(dict(model_options or {}), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"model_options must be from_urdf's keyword arguments as plain numbers, strings, "
            f"lists and dicts (a rotors file's content, say): {exc}"
        ) from None


def terms_block(urdf: str, gravity, Q: np.ndarray, V: np.ndarray, fields, options="{}") -> dict:
    """Every requested CoriolisState term for the rows of one block (a pure function: the
    cached instance is never called, only its clones, so a closed chain's block starts from
    the model's neutral closure on every worker)."""
    dyn = _dynamics(urdf, tuple(float(g) for g in gravity), options).clone()
    return _bag.compute_terms(dyn, Q, V, tuple(fields))


def terms_on_cluster(
    client,
    urdf: str,
    Q,
    V,
    *,
    gravity=(0.0, 0.0, -9.81),
    fields=_bag.TERM_FIELDS,
    rows_per_task: int = 20_000,
    model_options=None,
) -> dict:
    """:func:`coriolis_ros.offline.bag.compute_terms` on the cluster, in row blocks (a closed
    chain's rows in one block: each row's closure starts from the row before)."""
    if rows_per_task < 1:
        raise ValueError("rows_per_task must be at least 1")
    options = _options_key(model_options)
    Q = np.asarray(Q, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if Q.ndim != 2 or V.ndim != 2 or Q.shape[0] != V.shape[0]:
        raise ValueError(f"Q and V must be (T, n) arrays with the same T, got {Q.shape}, {V.shape}")
    try:  # built here first: a bad model or option is named before anything is submitted
        dyn = _dynamics(urdf, tuple(float(g) for g in gravity), options)
    except TypeError as exc:  # a keyword from_urdf does not take
        raise ValueError(f"model_options: {exc}") from None
    if dyn.closed is not None:
        rows_per_task = max(1, Q.shape[0])
    starts = range(0, Q.shape[0], rows_per_task)
    futures = [
        client.submit(
            terms_block,
            urdf,
            tuple(gravity),
            Q[a : a + rows_per_task],
            V[a : a + rows_per_task],
            tuple(fields),
            options,
            pure=True,
        )
        for a in starts
    ]
    blocks = client.gather(futures)
    if not blocks:  # no rows: compute the (empty) shapes locally
        return terms_block(urdf, gravity, Q, V, fields, options)
    return {key: np.concatenate([b[key] for b in blocks]) for key in blocks[0]}


def bags_on_cluster(
    client,
    bags: list[str | os.PathLike],
    *,
    output_dir: str | os.PathLike | None = None,
    fmt: str = "npz",
    **options,
) -> list[_bag.BagResult]:
    """:func:`coriolis_ros.offline.bag.process_bag` for every bag, one task per bag.

    ``options`` are process_bag's keyword arguments (urdf text, fields, write_bag_storage,
    plot, ...); outputs go to ``output_dir`` (default: beside each bag) as
    ``<bag>.coriolis.npz``, or ``.parquet`` with ``fmt="parquet"``.
    """
    outputs = [str(_bag.default_output(b, output_dir, fmt)) for b in bags]
    if len(set(outputs)) != len(outputs):
        raise ValueError("several bags would write the same output file")
    futures = [
        client.submit(_bag.process_bag, str(b), out, pure=False, **options)
        for b, out in zip(bags, outputs, strict=True)
    ]
    return client.gather(futures)
