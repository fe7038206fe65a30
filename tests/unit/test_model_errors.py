from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, KubeopsError, TimedOut


def test_errors_carry_their_message_and_what_the_module_still_reports():
    error = TimedOut("Timed out after 60 s", {"evicted": ["ns/a"]})
    assert isinstance(error, KubeopsError) and str(error) == "Timed out after 60 s"
    assert error.result == {"evicted": ["ns/a"]}
    assert Blocked("refused").result == {}
