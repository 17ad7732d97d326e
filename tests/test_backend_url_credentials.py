"""A user or password in a backend's base URL (a proxy with basic auth) never appears in an error
message, so a night's log (the cron log) does not hold it: the URL is shown as `http://…@host`."""

from __future__ import annotations

import pytest
from servers import Action, FaultServer
from test_backends import FAST, KINDS, make, req

from skillsleep.core.models.backends.base import RetryPolicy, shown_url
from skillsleep.core.shared.errors import BackendError


def test_shown_url_leaves_out_only_the_user_and_password() -> None:
    assert shown_url("https://me:s3cret@models.example:8443/v1?x=1") == "https://…@models.example:8443/v1?x=1"
    assert shown_url("https://token@models.example/v1") == "https://…@models.example/v1"
    assert shown_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [401, 500])
async def test_a_failing_server_is_named_without_the_password_in_its_url(
    kind: str, status: int, fault_server: FaultServer
) -> None:
    fault_server.default = Action(kind="status", status=status, body="nope")
    root = fault_server.url.replace("http://", "http://me:s3cret-pass@")
    backend = make(kind, root, retry=RetryPolicy(attempts=1, base_delay_s=0, max_delay_s=0, timeout_s=FAST.timeout_s))
    try:
        with pytest.raises(BackendError) as caught:
            await backend.complete(req())
    finally:
        await backend.aclose()
    message = str(caught.value)
    assert "s3cret-pass" not in message and f"http://…@127.0.0.1:{fault_server.port}" in message, message
