"""``coriolis-ros call SERVICE``: the node's services from the command line.

    compute_dynamics   every term at (q, q̇): --joint-names, --position, --velocity (and a
                       floating base's --base-position/--base-velocity, Slotine-Li's
                       --reference-velocity/--reference-acceleration)
    christoffel        Γ at the latest joint state, or at --joint-names/--position
    reset_observer     restart the momentum observer

The request fields are those of srv/ComputeDynamics.srv and srv/GetChristoffelSymbols.srv;
the answer is printed with its shapes (or as one JSON object). Exit status 0 when the node
answered ``success: true``, 1 when it refused (its reason on stderr) or did not answer.
"""

from __future__ import annotations

import json

from .formatting import dynamics_text, to_json
from .session import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Session, ToolError, domain_note

# what -> (node's service name, request fields it takes from the command line)
SERVICES = {
    "compute_dynamics": (
        "compute_dynamics",
        ("joint_names", "position", "velocity", "base_position", "base_velocity",
         "reference_velocity", "reference_acceleration"),
    ),  # fmt: skip
    "christoffel": ("get_christoffel_symbols", ("joint_names", "position", "base_position")),
    "reset_observer": ("reset_observer", ()),
}
ALIASES = {"get_christoffel_symbols": "christoffel"}
REQUEST_FIELDS = SERVICES["compute_dynamics"][1]


def service_type(what: str):
    if what == "reset_observer":
        from std_srvs.srv import Trigger

        return Trigger
    from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols

    return ComputeDynamics if what == "compute_dynamics" else GetChristoffelSymbols


def build_request(what: str, args, srv):
    """The request of ``srv`` from the command line; ToolError(usage) for an option the
    service does not take, or positions without names."""
    takes = SERVICES[what][1]
    given = {f: getattr(args, f) for f in REQUEST_FIELDS if getattr(args, f) is not None}
    extra = sorted(set(given) - set(takes))
    if extra:
        options = ", ".join("--" + f.replace("_", "-") for f in extra)
        raise ToolError(f"{what} takes no {options}", EXIT_USAGE)
    if "position" in given and "joint_names" not in given:
        raise ToolError("--position needs --joint-names (the same order)", EXIT_USAGE)
    request = srv.Request()
    for field, values in given.items():
        setattr(request, field, list(values) if field == "joint_names" else
                [float(v) for v in values])  # fmt: skip
    return request


def call(args) -> int:
    what = ALIASES.get(args.service, args.service)
    if not args.timeout > 0:
        raise ToolError("--timeout must be positive", EXIT_USAGE)
    srv = service_type(what)
    request = build_request(what, args, srv)
    with Session("call") as session:
        name = session.resolve(args.name or SERVICES[what][0])
        client = session.node.create_client(srv, name)
        if not client.wait_for_service(timeout_sec=args.timeout):
            raise ToolError(f"service {name} not available within {args.timeout:g} s "
                            f"({domain_note()})")  # fmt: skip
        future = client.call_async(request)
        if not session.spin_until(future.done, args.timeout):
            raise ToolError(f"{name} did not answer within {args.timeout:g} s")
        response = future.result()
    fields = args.field or None
    if what == "reset_observer":
        if args.format == "json":
            print(json.dumps({"service": name, "success": response.success,
                              "message": response.message}))  # fmt: skip
        else:
            print(f"success: {response.success}  message: {response.message}")
    elif response.success:  # a refusal's reason goes to stderr below, no empty arrays
        try:
            if args.format == "json":
                print(to_json(response, name, fields, key="service"))
            else:
                print(dynamics_text(response, name, fields, args.precision))
        except KeyError as exc:  # an unknown --field
            raise ToolError(str(exc.args[0]), EXIT_USAGE) from None
    if not response.success:
        raise ToolError(f"{name} refused: {response.message}", EXIT_FAILED)
    return EXIT_OK
