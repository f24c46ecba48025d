"""Publish a latched message again when a new subscriber matches (ROS-free).

A reliable, transient-local publisher is meant to hand its last message to readers that join
later. Fast DDS does not always do so (eProsima/Fast-DDS issue 3822: the stored sample sometimes
never reaches a late-joining reader), and then a node waiting for ``robot_description`` waits
forever. The demo's publishers therefore also publish the message again, as a new sample, when
their subscription count rises, and once more at the next poll in case the reader was matched on
the writer's side before it was ready. A subscriber that already has the message receives the
same text again; the coriolis node keeps its model when the text is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable


class LatchedResend:
    """Call ``publish()`` again when ``subscription_count()`` has risen since the last poll."""

    def __init__(self, publish: Callable[[], None], subscription_count: Callable[[], int]):
        self._publish = publish
        self._count = subscription_count
        self._seen = 0
        self._again = False
        self.resent = 0  # how many times the message was published again

    def poll(self) -> int:
        """Publish again if a subscriber matched since the last poll (or just before it)."""
        count = self._count()
        rose = count > self._seen
        if rose or self._again:
            self._publish()
            self.resent += 1
        self._again = rose
        self._seen = count
        return count
