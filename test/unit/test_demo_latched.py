"""LatchedResend: the demo publishes robot_description again when a subscriber matches."""

from coriolis_ros.demo.latched import LatchedResend


class _Publisher:
    def __init__(self):
        self.count = 0
        self.published = 0

    def publish(self):
        self.published += 1


def _resend():
    pub = _Publisher()
    return pub, LatchedResend(pub.publish, lambda: pub.count)


def test_nothing_is_published_while_no_subscriber_has_matched():
    pub, resend = _resend()
    for _ in range(5):
        assert resend.poll() == 0
    assert pub.published == 0 and resend.resent == 0


def test_a_new_subscriber_gets_the_message_now_and_at_the_next_poll_only():
    pub, resend = _resend()
    resend.poll()
    pub.count = 1
    assert resend.poll() == 1
    assert pub.published == 1
    resend.poll()
    assert pub.published == 2
    for _ in range(4):
        resend.poll()
    assert pub.published == 2 and resend.resent == 2


def test_each_rise_of_the_count_publishes_again_and_a_fall_does_not():
    pub, resend = _resend()
    pub.count = 1
    resend.poll()
    resend.poll()
    assert pub.published == 2
    pub.count = 0  # the subscriber left
    resend.poll()
    assert pub.published == 2
    pub.count = 1  # it came back
    resend.poll()
    assert pub.published == 3
    pub.count = 3  # two more at once
    resend.poll()
    resend.poll()
    resend.poll()
    assert pub.published == 5


def test_an_unchanged_count_after_the_repeat_publishes_nothing():
    pub, resend = _resend()
    pub.count = 2
    resend.poll()
    resend.poll()
    pub.published = 0
    for _ in range(10):
        resend.poll()
    assert pub.published == 0
