"""``coriolis-ros echo [TOPIC]``: print the messages of a topic (default ``coriolis_state``).

The topic's type is discovered from its publishers, so any message whose Python package is
installed can be printed (``/diagnostics``, ``joint_states``, ``robot_description``, ...); the
subscription's QoS follows the publishers' (a latched ``robot_description`` is received too).
"""

from __future__ import annotations

from .formatting import message_text, to_json
from .session import EXIT_OK, EXIT_USAGE, Session, ToolError, message_class


def count_of(args) -> int | None:
    """How many messages to print: --once is 1, --count N is N, neither: no limit."""
    if args.once:
        return 1
    if args.count is not None:
        if args.count < 1:
            raise ToolError("--count must be at least 1", EXIT_USAGE)
        return args.count
    return None


def echo(args) -> int:
    limit = count_of(args)
    if not args.timeout > 0:
        raise ToolError("--timeout must be positive", EXIT_USAGE)
    with Session("echo") as session:
        topic = session.resolve(args.topic)
        msg_type = message_class(session.topic_type(topic, args.timeout))
        printed = [0]
        fields = args.field or None

        def on_message(msg) -> None:
            if limit is not None and printed[0] >= limit:
                return
            if args.format == "json":
                text = to_json(msg, topic, fields)
            else:
                text = message_text(msg, topic, fields, args.precision)
            print(text, flush=True)
            printed[0] += 1

        session.node.create_subscription(
            msg_type, topic, _guarded(on_message), session.publisher_qos(topic)
        )
        if not session.spin_until(lambda: printed[0] > 0, args.timeout):
            hint = ""
            if msg_type.__name__ == "CoriolisState":
                hint = " (the node publishes a state once every joint has a position: " \
                    "is anything publishing joint_states?)"
            raise ToolError(f"no message on {topic} within {args.timeout:g} s{hint}")
        session.spin_until(lambda: limit is not None and printed[0] >= limit, None)
    return EXIT_OK


def _guarded(callback):
    """A subscription callback whose KeyError (an unknown --field) ends the tool with usage
    status instead of an rclpy traceback."""

    def call(msg):
        try:
            callback(msg)
        except KeyError as exc:
            raise ToolError(str(exc.args[0]), EXIT_USAGE) from None

    return call
