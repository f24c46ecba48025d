"""Messages as readable text or JSON, for ``coriolis-ros echo`` and ``call``.

CoriolisState and the services' responses are shown with their shapes
(:func:`coriolis_ros.messages.state_to_numpy`: vectors (n,), matrices (n, n), ``symbols``
(n, n, n)), under their field names; DiagnosticArray as one line per status and one
``key: value`` line per value; any other message field by field, nested messages indented.
JSON is one object per message with the same keys (the ``coriolis-ros compute`` keys for the
dynamics terms), stamps in integer nanoseconds.
"""

from __future__ import annotations

import array
import json

import numpy as np

from coriolis_ros.messages import STATE_FIELDS, state_to_numpy

LEVELS = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}
# Fields of the services' responses that CoriolisState does not have, in response order.
RESPONSE_EXTRA = ("slotine_li_torque", "symbols")


def is_dynamics(msg) -> bool:
    """CoriolisState, or a ComputeDynamics / GetChristoffelSymbols response."""
    fields = msg.get_fields_and_field_types()
    return "joint_names" in fields and ("coriolis_matrix" in fields or "symbols" in fields)


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def stamp_text(stamp) -> str:
    return f"{int(stamp.sec)}.{int(stamp.nanosec):09d}"


def dynamics_fields(msg, fields=None) -> dict:
    """{field: value} of a dynamics message in message order: arrays shaped, lists of names,
    None for a field the node left empty; only ``fields`` when given."""
    arrays = state_to_numpy(msg)
    order = [f for f in (*STATE_FIELDS, *RESPONSE_EXTRA) if f in arrays]
    if fields:
        unknown = [f for f in fields if f not in arrays]
        if unknown:
            raise KeyError(f"no field {', '.join(unknown)}; this message has {', '.join(order)}")
        order = list(fields)
    return {f: arrays[f] for f in order}


def dynamics_text(msg, title: str, fields=None, precision: int = 6) -> str:
    values = dynamics_fields(msg, fields)
    names = state_to_numpy(msg).get("joint_names") or []
    head = f"--- {title}"
    if hasattr(msg, "header"):
        head += f"  stamp {stamp_text(msg.header.stamp)}"
    lines = [head + f"  ({len(names)} DoF)"]
    if hasattr(msg, "success"):
        lines.append(f"success: {msg.success}  message: {msg.message}")
    with np.printoptions(precision=precision, suppress=True, linewidth=160):
        for key, value in values.items():
            if value is None:
                lines.append(f"{key}: (empty: not published)")
            elif isinstance(value, list):
                lines.append(f"{key}: {' '.join(value) if value else '(empty)'}")
            elif value.ndim == 3:
                lines.append(f"{key}: Gamma[i], C_ij = sum_k Gamma_ijk qd_k")
                for i, name in enumerate(names):
                    lines += [f"[{i}] {name}:", str(value[i])]
            elif value.ndim == 2:
                lines += [f"{key}:", str(value)]
            else:
                lines.append(f"{key}: {value}")
    return "\n".join(lines)


def to_plain(value):
    """A message (or field value) as JSON-ready dicts, lists and numbers."""
    if hasattr(value, "get_fields_and_field_types"):
        return {f: to_plain(getattr(value, f)) for f in value.get_fields_and_field_types()}
    if isinstance(value, (bytes, bytearray)):
        return value[0] if len(value) == 1 else list(value)
    if isinstance(value, (array.array, np.ndarray)):
        return np.asarray(value).tolist()
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def to_json(msg, source: str, fields=None, key: str = "topic") -> str:
    """One JSON object: ``{key: source, "stamp_ns": ..., field: value, ...}``."""
    if is_dynamics(msg):
        out = {key: source}
        if hasattr(msg, "header"):
            out["stamp_ns"] = stamp_ns(msg.header.stamp)
        for key in ("success", "message"):
            if hasattr(msg, key):
                out[key] = getattr(msg, key)
        for key, value in dynamics_fields(msg, fields).items():
            out[key] = value.tolist() if isinstance(value, np.ndarray) else value
        return json.dumps(out)
    plain = to_plain(msg)
    if fields:
        plain = {f: plain[f] for f in fields if f in plain}
    return json.dumps({key: source, **plain})


def diagnostics_text(msg, title: str) -> str:
    lines = [f"--- {title}  stamp {stamp_text(msg.header.stamp)}"]
    for status in msg.status:
        level = to_plain(status.level)
        lines.append(f"{LEVELS.get(level, level):<5} {status.name}: {status.message}")
        lines += [f"      {kv.key}: {kv.value}" for kv in status.values]
    return "\n".join(lines)


def generic_lines(value, indent: str = "", only=None) -> list[str]:
    lines = []
    for field in value.get_fields_and_field_types():
        if only and field not in only:
            continue
        v = getattr(value, field)
        if hasattr(v, "get_fields_and_field_types"):
            lines.append(f"{indent}{field}:")
            lines += generic_lines(v, indent + "  ")
        elif isinstance(v, (list, tuple)) and v and hasattr(v[0], "get_fields_and_field_types"):
            lines.append(f"{indent}{field}:")
            for item in v:
                inner = generic_lines(item, indent + "    ")
                lines.append(indent + "  - " + inner[0].lstrip())
                lines += inner[1:]
        else:
            text = to_plain(v)
            if isinstance(text, str) and "\n" in text:
                text = text.splitlines()[0] + f" ... ({len(text)} characters)"
            lines.append(f"{indent}{field}: {text}")
    return lines


def message_text(msg, title: str, fields=None, precision: int = 6) -> str:
    """The readable text of any message received on ``title``."""
    if is_dynamics(msg):
        return dynamics_text(msg, title, fields, precision)
    if type(msg).__name__ == "DiagnosticArray" and not fields:
        return diagnostics_text(msg, title)
    lines = generic_lines(msg, only=fields)
    return "\n".join([f"--- {title}", *lines])
