"""The library's own exception types."""


class URDFError(ValueError):
    """The URDF cannot be turned into a model; the message says why."""
