"""A stand-in `openclaw` CLI for the fast tests of `skillsleep install openclaw` and `skillsleep
schedule --openclaw`: it records every call and keeps cron jobs in a JSON file the way the real
gateway answers `cron list / add / rm --json`. The real CLI runs in tests/test_openclaw_gateway.py.

    fake = FakeOpenClaw.around(tmp_path, monkeypatch)  # on PATH; HOME, OPENCLAW_STATE_DIR and
                                           # SKILLSLEEP_HOME under tmp_path
    fake.env()                             # PATH with it first, FAKE_* variables
    fake.calls()                           # every call's arguments, oldest first
    fake.jobs()                            # the cron jobs the fake gateway holds
    invoke(*args)                          # `skillsleep ARGS` in-process: exit code, output (JSON read), stderr
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from skillsleep.slash_commands.cli import main

SCRIPT = r"""#!{python}
import json, os, sys, uuid
args = sys.argv[1:]
with open(os.environ["FAKE_OPENCLAW_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
if args[:1] == ["--version"]:
    print("OpenClaw 2026.9.6 (fake)")
    sys.exit(0)
if os.environ.get("FAKE_OPENCLAW_FAIL"):
    sys.exit(os.environ["FAKE_OPENCLAW_FAIL"])
if args[:1] == ["cron"]:
    if os.environ.get("FAKE_OPENCLAW_GATEWAY_DOWN"):
        message = ("Gateway not reachable at ws://127.0.0.1:18789 (ECONNREFUSED).\nStart it with `openclaw gateway run` "
                   "or check `openclaw gateway status`.\nGateway target: ws://127.0.0.1:18789")
        print(json.dumps({{"ok": False, "error": {{"type": "cli_error", "message": message}}}}))
        print(message, file=sys.stderr)
        sys.exit(1)
    store = os.environ["FAKE_OPENCLAW_JOBS"]
    jobs = json.load(open(store)) if os.path.exists(store) else []
    verb = args[1]
    if verb == "list":
        print(json.dumps({{"jobs": jobs, "total": len(jobs), "hasMore": False}}))
    elif verb == "add":
        job = {{"id": str(uuid.uuid4()), "enabled": True, "payload": {{"kind": "command", "env": {{}}}}}}
        i = 2
        while i < len(args):
            flag, value = args[i], args[i + 1] if i + 1 < len(args) else None
            if flag == "--name": job["name"] = value
            elif flag == "--description": job["description"] = value
            elif flag == "--cron": job["schedule"] = {{"kind": "cron", "expr": value}}
            elif flag == "--command-argv": job["payload"]["argv"] = json.loads(value)
            elif flag == "--command-cwd": job["payload"]["cwd"] = value
            elif flag == "--command-env": job["payload"]["env"].update([value.split("=", 1)])
            elif flag == "--timeout-seconds": job["payload"]["timeoutSeconds"] = int(value)
            else:
                i += 1
                continue
            i += 2
        jobs.append(job)
        print(json.dumps(job))
    elif verb == "rm":
        found = [j for j in jobs if j["id"] == args[2]]
        jobs = [j for j in jobs if j["id"] != args[2]]
        print(json.dumps({{"ok": True, "removed": bool(found)}}))
    json.dump(jobs, open(store, "w"))
"""


@dataclass(frozen=True)
class FakeOpenClaw:
    root: Path

    @classmethod
    def create(cls, tmp_path: Path) -> FakeOpenClaw:
        fake = cls(tmp_path / "fake-openclaw")
        (fake.root / "bin").mkdir(parents=True)
        exe = fake.root / "bin" / "openclaw"
        exe.write_text(SCRIPT.format(python=sys.executable))
        exe.chmod(0o755)
        return fake

    @classmethod
    def around(cls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeOpenClaw:
        """The fake on PATH, with HOME, OPENCLAW_STATE_DIR and SKILLSLEEP_HOME under `tmp_path`."""
        fake = cls.create(tmp_path)
        for name, value in {
            **fake.env(),
            "HOME": str(tmp_path / "home"),
            "OPENCLAW_STATE_DIR": str(tmp_path / "state"),
            "SKILLSLEEP_HOME": str(tmp_path / "data"),
        }.items():
            monkeypatch.setenv(name, value)
        return fake

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{self.root / 'bin'}:/usr/bin:/bin",
            "FAKE_OPENCLAW_LOG": str(self.root / "calls.jsonl"),
            "FAKE_OPENCLAW_JOBS": str(self.root / "jobs.json"),
            **extra,
        }

    def calls(self) -> list[list[str]]:
        log = self.root / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def jobs(self) -> list[dict[str, Any]]:
        store = self.root / "jobs.json"
        return list(json.loads(store.read_text())) if store.exists() else []

    def add_job(self, **job: Any) -> None:
        (self.root / "jobs.json").write_text(json.dumps([*self.jobs(), job]))


def invoke(*args: str) -> tuple[int, Any, str]:
    """`skillsleep ARGS` in-process: the exit code, stdout (parsed when it is JSON) and stderr."""
    result = CliRunner().invoke(main, list(args))
    try:
        out = json.loads(result.stdout)
    except ValueError:
        out = result.stdout
    return result.exit_code, out, result.stderr
