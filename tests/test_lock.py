"""The state-directory lock: a second holder fails at once; a killed holder leaves no stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skillsleep.core.night.lock import StateLock
from skillsleep.core.shared.errors import Busy

HOLD = (
    "import sys, time; from pathlib import Path; from skillsleep.core.night.lock import StateLock\n"
    "with StateLock(Path(sys.argv[1]), 'night'):\n    print('held', flush=True); time.sleep(600)\n"
)


def test_second_holder_in_another_process_fails_with_who_holds_it(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        with pytest.raises(Busy, match=rf"pid {proc.pid}, night since"), StateLock(tmp_path, "adopt"):
            pass
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # kill -9: the kernel drops the lock
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
    with StateLock(tmp_path, "night"):  # no stale lock after a kill
        pass


def test_lock_is_released_on_exit_and_reusable(tmp_path: Path) -> None:
    with StateLock(tmp_path, "night"), pytest.raises(Busy), StateLock(tmp_path, "night"):
        pass
    with StateLock(tmp_path, "night"):
        pass
