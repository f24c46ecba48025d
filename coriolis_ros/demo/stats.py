"""Statistics and formatting for the demo monitor (ROS-free).

The monitor feeds every received CoriolisState (as plain numbers) and every diagnostics status
into a :class:`MonitorStats`; once per reporting period ``report()`` returns a :class:`Report`
for the window since the previous report and :func:`format_report` turns it into one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DiagnosticsSummary",
    "MonitorStats",
    "Report",
    "coriolis_norms",
    "format_report",
    "percentile",
    "summarize_diagnostics",
]


def percentile(values, p: float) -> float:
    """The p-th percentile (0..100, linear interpolation) of ``values``; NaN when empty."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {p}")
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return math.nan
    return float(np.percentile(arr, p))


def coriolis_norms(n: int, coriolis_matrix, mass_matrix_derivative) -> tuple[float, float]:
    """(||C||_F, ||Mdot - C - C^T||_F) from the flat row-major message fields.

    ``mass_matrix_derivative`` may be empty (field disabled): the residual is then NaN.
    Raises ValueError when a field does not hold n*n finite numbers.
    """
    if int(n) != n or n < 0:
        raise ValueError(f"joint count must be a non-negative integer, got {n}")
    n = int(n)
    c = np.asarray(coriolis_matrix, dtype=float)
    if c.size != n * n:
        raise ValueError(f"coriolis_matrix has {c.size} entries, expected {n}x{n}={n * n}")
    if not np.all(np.isfinite(c)):
        raise ValueError("coriolis_matrix contains non-finite values")
    c = c.reshape(n, n)
    c_norm = float(np.linalg.norm(c))
    md = np.asarray(mass_matrix_derivative, dtype=float)
    if md.size == 0:
        return c_norm, math.nan
    if md.size != n * n:
        raise ValueError(f"mass_matrix_derivative has {md.size} entries, expected {n * n}")
    if not np.all(np.isfinite(md)):
        raise ValueError("mass_matrix_derivative contains non-finite values")
    residual = float(np.linalg.norm(md.reshape(n, n) - c - c.T))
    return c_norm, residual


# --- diagnostics ---------------------------------------------------------------------------

# Keys of the coriolis node's DiagnosticStatus that the monitor shows (values are numbers as text,
# "nan" when unknown).
DIAG_INPUT_RATE = "input_rate_hz"
DIAG_OUTPUT_RATE = "output_rate_hz"
DIAG_COMPUTE_MEAN = "compute_time_mean_ms"
# Cumulative counters of the node (coriolis_ros.node.stats.Counters): coriolis_state messages
# published, and joint states superseded by a newer one while the node was busy (skipped).
DIAG_PUBLISHED = "published"
DIAG_SKIPPED = "skipped"
_DIAG_KEYS = (DIAG_INPUT_RATE, DIAG_OUTPUT_RATE, DIAG_COMPUTE_MEAN, DIAG_PUBLISHED, DIAG_SKIPPED)


@dataclass(frozen=True)
class DiagnosticsSummary:
    """What the monitor takes from the node's diagnostics (NaN when not present)."""

    input_rate_hz: float = math.nan
    output_rate_hz: float = math.nan
    compute_time_s: float = math.nan
    published: float = math.nan  # node's total coriolis_state messages published
    skipped: float = math.nan  # node's total joint states skipped (superseded)


def _number(text) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def summarize_diagnostics(values) -> DiagnosticsSummary | None:
    """Rates, mean compute time and the published/skipped totals from the node's diagnostics.

    ``values`` is an iterable of (key, value) strings of one DiagnosticStatus.  Returns None when
    none of the node's keys is present (a status from another node); a present but unparsable or
    non-finite value gives NaN for that quantity.
    """
    table = {str(k): v for k, v in values}
    if not any(k in table for k in _DIAG_KEYS):
        return None
    return DiagnosticsSummary(
        input_rate_hz=_number(table.get(DIAG_INPUT_RATE, "nan")),
        output_rate_hz=_number(table.get(DIAG_OUTPUT_RATE, "nan")),
        compute_time_s=_number(table.get(DIAG_COMPUTE_MEAN, "nan")) * 1e-3,
        published=_number(table.get(DIAG_PUBLISHED, "nan")),
        skipped=_number(table.get(DIAG_SKIPPED, "nan")),
    )


# --- windowed statistics -------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """Statistics of one reporting window."""

    elapsed_s: float
    n: int | None
    input_rate_hz: float
    output_rate_hz: float
    latency_p50_s: float
    latency_p99_s: float
    compute_time_s: float
    c_norm: float
    residual_max: float
    bad_messages: int
    received_total: int = 0  # coriolis_state messages received by the monitor since its start
    node_published: float = math.nan  # the node's own totals, from its latest diagnostics
    node_skipped: float = math.nan


class MonitorStats:
    """Accumulates received states between two reports.  Times are in nanoseconds."""

    def __init__(self, start_ns: int):
        self._start_ns = int(start_ns)
        self._window_start_ns = int(start_ns)
        self._diagnostics = DiagnosticsSummary()
        self._received_total = 0
        self._reset()

    def _reset(self):
        self._states = 0
        self._inputs = 0
        self._latencies: list[float] = []
        self._residual_max = math.nan
        self._c_norm = math.nan
        self._n: int | None = None
        self._bad = 0

    def add_input(self) -> None:
        """Count one joint_states message (when the monitor subscribes to them itself)."""
        self._inputs += 1

    def add_state(self, receive_ns: int, stamp_ns: int, n: int, coriolis_matrix, mdot) -> None:
        """One CoriolisState: receive time and header stamp (ns), joint count, C and Mdot.

        A message whose matrices do not have n*n finite entries counts as bad (no numbers taken).
        """
        self._states += 1
        self._received_total += 1
        try:
            c_norm, residual = coriolis_norms(n, coriolis_matrix, mdot)
        except ValueError:
            self._bad += 1
            return
        self._n = int(n)
        self._c_norm = c_norm
        if not math.isnan(residual):
            self._residual_max = (
                residual if math.isnan(self._residual_max) else max(self._residual_max, residual)
            )
        if stamp_ns > 0:
            self._latencies.append((int(receive_ns) - int(stamp_ns)) * 1e-9)

    def set_diagnostics(self, summary: DiagnosticsSummary) -> None:
        self._diagnostics = summary

    def report(self, now_ns: int, count_inputs: bool = False) -> Report:
        """Statistics since the last report; starts a new window.

        The input rate comes from the monitor's own joint_states count when ``count_inputs`` is
        true, else from the node's diagnostics (NaN if they do not report it).
        """
        now_ns = int(now_ns)
        window = (now_ns - self._window_start_ns) * 1e-9
        if window <= 0:
            raise ValueError("report() needs a later time than the previous report")
        diag = self._diagnostics
        in_rate = self._inputs / window if count_inputs else diag.input_rate_hz
        rep = Report(
            elapsed_s=(now_ns - self._start_ns) * 1e-9,
            n=self._n,
            input_rate_hz=in_rate,
            output_rate_hz=self._states / window,
            latency_p50_s=percentile(self._latencies, 50),
            latency_p99_s=percentile(self._latencies, 99),
            compute_time_s=diag.compute_time_s,
            c_norm=self._c_norm,
            residual_max=self._residual_max,
            bad_messages=self._bad,
            received_total=self._received_total,
            node_published=diag.published,
            node_skipped=diag.skipped,
        )
        self._window_start_ns = now_ns
        self._reset()
        return rep


def _fmt(value: float, spec: str, unit: str = "", scale: float = 1.0) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value * scale:{spec}}{unit}"


def format_report(rep: Report) -> str:
    """One line, ASCII only, ``key=value`` fields separated by spaces (n/a when unknown).

    Example: ``t=3.0s n=7 in=500.0Hz out=499.8Hz received=1496 node_published=1000
    node_skipped=2 latency_p50=0.62ms latency_p99=1.90ms compute=0.150ms |C|_F=1.234e+00
    |Mdot-C-C^T|=4.4e-16``: ``received`` is the monitor's own total, ``node_published`` and
    ``node_skipped`` the node's totals from its latest diagnostics (published once a second,
    so they trail ``received`` by up to that much). Messages the node published that the
    monitor never got are node_published - received, once the stream has stopped.
    """
    fields = [
        f"t={rep.elapsed_s:.1f}s",
        f"n={rep.n if rep.n is not None else 'n/a'}",
        f"in={_fmt(rep.input_rate_hz, '.1f', 'Hz')}",
        f"out={_fmt(rep.output_rate_hz, '.1f', 'Hz')}",
        f"received={rep.received_total}",
        f"node_published={_fmt(rep.node_published, '.0f')}",
        f"node_skipped={_fmt(rep.node_skipped, '.0f')}",
        f"latency_p50={_fmt(rep.latency_p50_s, '.2f', 'ms', 1e3)}",
        f"latency_p99={_fmt(rep.latency_p99_s, '.2f', 'ms', 1e3)}",
        f"compute={_fmt(rep.compute_time_s, '.3f', 'ms', 1e3)}",
        f"|C|_F={_fmt(rep.c_norm, '.3e')}",
        f"|Mdot-C-C^T|={_fmt(rep.residual_max, '.1e')}",
    ]
    if rep.bad_messages:
        fields.append(f"bad={rep.bad_messages}")
    return " ".join(fields)
