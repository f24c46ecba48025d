"""The momentum observer over the joint-state stream: :mod:`coriolis_ros.stream.observer_feed`
(shared with the bag reader); re-exported here for the node's modules."""

from coriolis_ros.stream.observer_feed import (  # noqa: F401
    DUPLICATE,
    OK,
    PAUSED,
    PAUSED_BASE,
    RESET_BACKWARDS,
    RESET_GAP,
    RESET_JUMP,
    ObserverFeed,
    observer_gains,
)
