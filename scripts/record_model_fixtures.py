"""Record what `claude -p` and `codex exec` print as skillsleep's model providers, against the
scripted model server (tests/agent_server.py), for the fast tests of their parsers.

    .venv/bin/python scripts/record_model_fixtures.py

Writes tests/fixtures/claude/model/ and tests/fixtures/codex/model/: one stdout per case, each
produced by the provider's own command line (`prepare()`), and manifest.json with each case's exit
code. The server's port is rewritten to 43210, a dead server's to 9; the user home is a fresh
temporary folder, so nothing of the real one is read.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from agent_server import AgentServer  # noqa: E402

from skillsleep.core.models.backends.base import BackendSettings  # noqa: E402
from skillsleep.core.shared.records import CompletionRequest, Message  # noqa: E402
from skillsleep.harnesses.agent_cli import run_cli  # noqa: E402
from skillsleep.harnesses.agent_model import AgentModelBackend  # noqa: E402
from skillsleep.harnesses.claude_code.model import ClaudeCodeModel  # noqa: E402
from skillsleep.harnesses.codex.model import CodexModel  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
GOOD = '{"answer": "ok"}'
# case → (the server's reply, statuses it fails with first, whether the server is dead)
CASES: dict[str, tuple[str, list[int], bool]] = {
    "structured": (GOOD, [], False),
    "not-json": ("plain words", [], False),
    "wrong-shape": ('{"wrong": 1}', [], False),
    "rate-limit": (GOOD, [429], False),
    "server-error": (GOOD, [500], False),
    "unauthorized": (GOOD, [401], False),
    "dead-server": (GOOD, [], True),
}


async def record(cls: type[AgentModelBackend], out: Path, url_suffix: str) -> dict[str, int | None]:
    manifest: dict[str, int | None] = {}
    request = CompletionRequest(
        model="stub-model",
        messages=[Message(role="system", content="You grade answers."), Message(role="user", content="grade it")],
        json_schema=SCHEMA,
        max_tokens=256,
    )
    for case, (reply, failures, dead) in CASES.items():
        with AgentServer(reply=reply) as server, tempfile.TemporaryDirectory() as tmp:
            server.failures = list(failures)
            url = "http://127.0.0.1:9" if dead else server.url
            backend = cls(BackendSettings(model="stub-model", base_url=url + url_suffix))
            env = {"PATH": os.environ["PATH"], "HOME": tmp}
            (Path(tmp) / "work").mkdir()
            call = backend.prepare(cls.cli.default_command, request, env, Path(tmp))
            result = await run_cli(call.argv, cwd=Path(tmp) / "work", env=call.env, timeout_s=120, stdin=call.stdin)
            text = result.stdout.replace(f"127.0.0.1:{server.port}", "127.0.0.1:43210")
            (out / f"{case}.{'json' if cls is ClaudeCodeModel else 'jsonl'}").write_text(text, encoding="utf-8")
            manifest[case] = result.returncode
    return manifest


async def main() -> None:
    for cls, folder, suffix in ((ClaudeCodeModel, "claude", ""), (CodexModel, "codex", "/v1")):
        out = ROOT / "tests" / "fixtures" / folder / "model"
        out.mkdir(parents=True, exist_ok=True)
        manifest = await record(cls, out, suffix)
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        print(folder, manifest)


if __name__ == "__main__":
    asyncio.run(main())
