"""The node's parameters as ROS 2 parameters: declared with descriptors from
:data:`~coriolis_ros.node.params.PARAMETERS`, unknown ones warned by name."""

from __future__ import annotations

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.parameter import Parameter

from .param_checks import unknown_parameter_lines
from .params import PARAMETERS, validate

_ARRAY_TYPES = {
    "string": Parameter.Type.STRING_ARRAY,
    "double": Parameter.Type.DOUBLE_ARRAY,
    "integer": Parameter.Type.INTEGER_ARRAY,
}


def descriptor(spec) -> ParameterDescriptor:
    text = spec.description
    if spec.constraints:
        text += f" ({spec.constraints})"
    d = ParameterDescriptor(
        description=text, read_only=spec.read_only, dynamic_typing=spec.dynamic_typing
    )
    if spec.constraints:
        d.additional_constraints = spec.constraints
    if spec.minimum is not None:
        if isinstance(spec.default, float):
            d.floating_point_range = [
                FloatingPointRange(
                    from_value=float(spec.minimum), to_value=float(spec.maximum), step=0.0
                )
            ]
        else:
            d.integer_range = [
                IntegerRange(from_value=int(spec.minimum), to_value=int(spec.maximum), step=1)
            ]
    return d


def declare_all(node) -> dict:
    """Declare every parameter on `node`; {name: value}. ValueError for a value that is
    refused (the start-up then ends with exit status 2)."""
    values = {}
    for spec in PARAMETERS:
        # An empty array has no type of its own: declare those by type (unset means []).
        default = _ARRAY_TYPES[spec.array_type] if spec.array_type else spec.default
        value = node.declare_parameter(spec.name, default, descriptor(spec)).value
        values[spec.name] = [] if spec.array_type and value is None else value
    for name, value in values.items():
        reason = validate(name, value)
        if reason is not None:
            raise ValueError(reason)
    if len(values["locked_joints"]) != len(values["locked_positions"]):
        raise ValueError(
            f"locked_joints has {len(values['locked_joints'])} names but locked_positions "
            f"{len(values['locked_positions'])} values"
        )
    for line in unknown_parameter_lines(node._parameter_overrides, values):
        node.get_logger().warning(line)
    return values
