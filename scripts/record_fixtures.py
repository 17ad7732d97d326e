"""Record the project's own agent fixtures by running the real CLIs against the scripted model server.

    .venv/bin/python scripts/record_fixtures.py                       # everything
    .venv/bin/python scripts/record_fixtures.py --only stdout         # headless stdout samples only
    .venv/bin/python scripts/record_fixtures.py --only transcripts --agent codex

Writes tests/fixtures/recorded/ (see its README.md). Each agent runs in a fake user home inside a
temporary folder; nothing of the real home is read or written. Temporary paths are rewritten to
/home/dev (file contents and directory names) and the server's port to a fixed one, so a
re-recording changes only ids, timestamps and timings. A part that is recorded replaces only its
own folders: `--only stdout --agent claude` rewrites tests/fixtures/recorded/claude/stdout/.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "recorded"
sys.path.insert(0, str(ROOT / "tests"))

from agent_server import USAGE_IN, USAGE_OUT, AgentServer  # noqa: E402

AGENTS = ("claude", "codex", "openclaw")
STABLE_HOME = "/home/dev"
STABLE_PORT = "43210"  # the live stub server, as written into the fixtures
DEAD_PORT = "9"  # a closed port, as written into the fixtures
LONG = 1500
CLAUDE_QUIET = {
    "ANTHROPIC_API_KEY": "dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def claude_dir_name(path: str) -> str:
    """Claude Code's project folder name for a cwd: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Rewriter:
    """Turns temporary paths and ports into stable ones, in text and in path names."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def add(self, real: str, stable: str) -> None:
        self.pairs.append((real, stable))
        if real.startswith("/"):
            self.pairs.append((claude_dir_name(real), claude_dir_name(stable)))
        self.pairs.sort(key=lambda p: -len(p[0]))

    def text(self, s: str) -> str:
        for real, stable in self.pairs:
            s = s.replace(real, stable)
        return s

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v


def answer_skill(skills_dir: Path, word: str) -> None:
    """Install the `answer` skill (its SKILL_SAYS word makes the stub answer `word`) in `skills_dir`."""
    skill = skills_dir / "answer" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: answer\ndescription: How to answer a question in this project.\n---\n\n"
        f"Always answer with one word. SKILL_SAYS: {word}\n"
    )


class Recorder:
    def __init__(self, bin_dir: Path, tmp: Path, server: AgentServer) -> None:
        self.bin_dir = bin_dir
        self.node_bin = bin_dir.parent / "node" / "bin"
        self.tmp = tmp
        self.server = server
        self.dead = closed_port()
        self.rw = Rewriter()
        self.rw.add(f"127.0.0.1:{server.port}", f"127.0.0.1:{STABLE_PORT}")
        self.rw.add(f"127.0.0.1:{self.dead}", f"127.0.0.1:{DEAD_PORT}")
        self.rw.add(str(bin_dir) + "/", "")
        self.rw.add(str(bin_dir.parent), "/opt/agents/node_modules")
        self.versions: dict[str, str] = {}
        self.summary: list[str] = []

    # --- homes -------------------------------------------------------------------------------

    def home(self, name: str) -> Path:
        """A fresh fake user home `<tmp>/<name>` (written as /home/dev) with a project folder."""
        h = self.tmp / name
        (h / "project").mkdir(parents=True)
        self.rw.add(str(h), STABLE_HOME)
        return h

    def claude_env(self, home: Path, base_url: str | None = None) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": base_url or self.server.url,
            **CLAUDE_QUIET,
        }

    def codex_env(self, home: Path, port: int | None = None) -> dict[str, str]:
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "stub-model"\nmodel_provider = "local"\ncheck_for_update_on_startup = false\n\n'
            "[analytics]\nenabled = false\n\n"
            "[features]\nplugins = false\nremote_plugin = false\napps = false\nunbounded_connection_retries = false\n\n"
            f'[model_providers.local]\nname = "local"\nbase_url = "http://127.0.0.1:{port or self.server.port}/v1"\n'
            'wire_api = "responses"\nenv_key = "STUB_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        # Codex refuses its PATH helpers when CODEX_HOME sits in the temp dir: give it another one.
        tmpdir = home / ".tmp"
        tmpdir.mkdir(exist_ok=True)
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "STUB_KEY": "dummy",
            "TMPDIR": str(tmpdir),
        }

    def openclaw_env(self, home: Path, port: int | None = None) -> dict[str, str]:
        state = home / ".openclaw"
        state.mkdir(exist_ok=True)
        config = {
            "update": {"checkOnStart": False},
            "models": {
                "providers": {
                    "local": {
                        "baseUrl": f"http://127.0.0.1:{port or self.server.port}/v1",
                        "apiKey": "dummy",
                        "api": "openai-completions",
                        "models": [
                            {"id": "stub-model", "name": "stub-model", "contextWindow": 32000, "maxTokens": 4096}
                        ],
                    }
                }
            },
            "agents": {"defaults": {"model": {"primary": "local/stub-model"}}},
        }
        (state / "openclaw.json").write_text(json.dumps(config, indent=2))
        return {
            "PATH": f"{self.node_bin}:/usr/bin:/bin",
            "HOME": str(home),
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "DO_NOT_TRACK": "1",
        }

    # --- running -----------------------------------------------------------------------------

    def run(
        self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        exe = [str(self.bin_dir / argv[0]), *argv[1:]]
        try:
            return subprocess.run(
                exe, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            return subprocess.CompletedProcess(exe, 124, out, err + "\n[record_fixtures: timed out]")

    def stdout_sample(
        self, folder: Path, manifest: dict[str, Any], name: str, argv: list[str], env: dict[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        proc = self.run(argv, env, cwd)
        (folder / name).write_text(self.rw.text(proc.stdout))
        manifest[name] = {
            "argv": self.rw.value(argv),
            "exit_code": proc.returncode,
            "stderr_tail": self.rw.text(proc.stderr)[-2000:],
        }
        self.summary.append(f"  {folder.parent.name}/stdout/{name}: exit {proc.returncode}, {len(proc.stdout)} bytes")
        return proc

    def version(self, agent: str, env: dict[str, str], cwd: Path) -> str:
        if agent not in self.versions:
            proc = self.run([agent, "--version"], env, cwd, timeout=60)
            m = re.search(r"\d+\.\d+\.\d+", proc.stdout)
            self.versions[agent] = m.group(0) if m else proc.stdout.strip()
        return self.versions[agent]

    # --- b) headless stdout samples ----------------------------------------------------------

    def stdout_claude(self, folder: Path) -> dict[str, Any]:
        home = self.home("claude-stdout")
        work = home / "project"
        skill = home / "skill.md"
        skill.write_text("# Answer skill\n\nAlways answer with one word. SKILL_SAYS: kiwi\n")
        env = self.claude_env(home)
        base = ["--model", "stub-model", "--no-session-persistence"]
        stream = ["--output-format", "stream-json", "--verbose"]
        tools = ["--allowedTools", "Bash", "--max-turns", "4"]
        m: dict[str, Any] = {}
        self.stdout_sample(
            folder, m, "plain.json", ["claude", "-p", "say hello", *base, "--output-format", "json", *tools], env, work
        )
        self.stdout_sample(
            folder, m, "plain.stream.jsonl", ["claude", "-p", "say hello", *base, *stream, *tools], env, work
        )
        self.stdout_sample(
            folder,
            m,
            "tool.stream.jsonl",
            ["claude", "-p", "STUB_TOOL: echo from-tool", *base, *stream, *tools],
            env,
            work,
        )
        self.stdout_sample(
            folder,
            m,
            "skill.stream.jsonl",
            ["claude", "-p", "what now", *base, *stream, "--append-system-prompt-file", str(skill), *tools],
            env,
            work,
        )
        dead_env = self.claude_env(home, base_url=f"http://127.0.0.1:{self.dead}")
        self.stdout_sample(
            folder, m, "dead-server.stream.jsonl", ["claude", "-p", "say hello", *base, *stream, *tools], dead_env, work
        )
        self.stdout_sample(
            folder,
            m,
            "max-turns.stream.jsonl",
            ["claude", "-p", "STUB_TOOL: echo from-tool", *base, *stream, "--allowedTools", "Bash", "--max-turns", "1"],
            env,
            work,
        )
        self.version("claude", env, work)
        return m

    def stdout_codex(self, folder: Path) -> dict[str, Any]:
        home = self.home("codex-stdout")
        work = home / "project"
        answer_skill(work / ".agents" / "skills", "mango")
        env = self.codex_env(home)
        base = ["codex", "exec", "--json", "--skip-git-repo-check", "--ephemeral"]
        m: dict[str, Any] = {}
        self.stdout_sample(folder, m, "plain.jsonl", [*base, "say hello"], env, work)
        self.stdout_sample(folder, m, "tool.jsonl", [*base, "STUB_TOOL: echo from-tool"], env, work)
        self.stdout_sample(folder, m, "skill.jsonl", [*base, "$answer what now"], env, work)
        dead_home = self.home("codex-stdout-dead")
        dead_env = self.codex_env(dead_home, port=self.dead)
        self.stdout_sample(folder, m, "dead-server.jsonl", [*base, "say hello"], dead_env, dead_home / "project")
        self.version("codex", env, work)
        return m

    def stdout_openclaw(self, folder: Path) -> dict[str, Any]:
        home = self.home("openclaw-stdout")
        work = home / "project"
        answer_skill(work / "skills", "papaya")
        env = self.openclaw_env(home)
        m: dict[str, Any] = {}

        def argv(prompt: str) -> list[str]:
            return ["openclaw", "agent", "exec", prompt, "--json", "--timeout", "60", "--cwd", str(work)]

        self.stdout_sample(folder, m, "plain.json", argv("say hello"), env, work)
        self.stdout_sample(folder, m, "tool.json", argv("STUB_TOOL: echo from-tool"), env, work)
        self.stdout_sample(folder, m, "skill.json", argv("$answer what now"), env, work)
        dead_home = self.home("openclaw-stdout-dead")
        dead_env = self.openclaw_env(dead_home, port=self.dead)
        dead_work = dead_home / "project"
        self.stdout_sample(
            folder,
            m,
            "dead-server.json",
            ["openclaw", "agent", "exec", "say hello", "--json", "--timeout", "60", "--cwd", str(dead_work)],
            dead_env,
            dead_work,
        )
        self.version("openclaw", env, work)
        kept = sorted(Path(env["OPENCLAW_STATE_DIR"]).glob("agents/*/agent/*.sqlite"))
        self.summary.append(f"  openclaw/stdout: transcript stores left in OPENCLAW_STATE_DIR: {len(kept)}")
        return m

    def record_stdout(self, agent: str) -> None:
        folder = OUT / agent / "stdout"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        manifest = getattr(self, f"stdout_{agent}")(folder)
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    # --- a) persisted transcripts ------------------------------------------------------------

    def session_run(
        self, agent: str, kind: str, argv: list[str], env: dict[str, str], cwd: Path, **expect: Any
    ) -> dict[str, Any]:
        """One CLI run whose transcript is kept; returns its manifest entry (without the file)."""
        proc = self.run(argv, env, cwd)
        if proc.returncode != 0:
            sys.exit(f"{agent} {kind} run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        if agent == "openclaw":  # one JSON document
            events = [json.loads(proc.stdout)]
        else:  # JSON lines
            events = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
        self.summary.append(f"  {agent} {kind}: {' '.join(self.rw.value(argv[1:3]))}… exit 0")
        return {"agent": agent, "kind": kind, "cwd": str(cwd), "argv": argv, "events": events, **expect}

    def transcripts_claude(self, folder: Path) -> list[dict[str, Any]]:
        home = self.home("claude")
        work, scratch = home / "project", home / "scratch"
        scratch.mkdir()
        skill = home / ".claude" / "skills" / "stub-skill" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(
            "---\nname: stub-skill\ndescription: Answers for the stub server.\n---\n\n"
            "Answer in one word. SKILL_SAYS: plum\n\nArguments: $ARGUMENTS\n"
        )
        env = self.claude_env(home)
        common = [
            "--model",
            "stub-model",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Bash",
            "--max-turns",
            "4",
        ]
        runs = [
            self.session_run(
                "claude",
                "plain",
                ["claude", "-p", "say hello", *common],
                env,
                work,
                prompts=["say hello"],
                answers=["hello"],
                tool_calls=[],
                model_calls=1,
            ),
            self.session_run(
                "claude",
                "tool",
                ["claude", "-p", "STUB_TOOL: echo from-tool", *common],
                env,
                work,
                prompts=["STUB_TOOL: echo from-tool"],
                answers=["hello | tool said: from-tool"],
                tool_calls=[
                    {"tool": "Bash", "arguments": {"command": "echo from-tool"}, "result_contains": "from-tool"}
                ],
                model_calls=2,
            ),
        ]
        first = self.session_run("claude", "resume", ["claude", "-p", "first turn", *common], env, work)
        sid = _claude_sid(first["events"])
        second = self.session_run(
            "claude", "resume", ["claude", "-p", "second turn", "--resume", sid, *common], env, work
        )
        if _claude_sid(second["events"]) != sid:
            sys.exit(f"claude --resume started a new session {_claude_sid(second['events'])} instead of {sid}")
        runs.append(
            {
                **first,
                "events": first["events"] + second["events"],
                "prompts": ["first turn", "second turn"],
                "answers": ["hello", "hello"],
                "tool_calls": [],
                "model_calls": 2,
                "argv": [first["argv"], second["argv"]],
            }
        )
        runs.append(
            self.session_run(
                "claude",
                "slash",
                ["claude", "-p", "/stub-skill some args", *common],
                env,
                work,
                prompts=[],
                commands=[{"name": "/stub-skill", "args": "some args"}],
                answers=["plum"],
                tool_calls=[],
                model_calls=1,
            )
        )
        runs.append(
            self.session_run(
                "claude",
                "bare",
                ["claude", "--bare", "-p", "say hello", *common],
                env,
                scratch,
                prompts=["say hello"],
                answers=["hello"],
                tool_calls=[],
                model_calls=1,
            )
        )
        version = self.version("claude", env, work)
        projects = home / ".claude" / "projects"
        self.copy_tree(projects, folder / "config" / "projects", _shorten_claude)
        for r in runs:
            r["session_id"] = _claude_sid(r["events"])
            r["reported_usage"] = _sum_usage(
                [e.get("usage") for e in r["events"] if e.get("type") == "result"], "input_tokens", "output_tokens"
            )
            r["file"] = _only(folder.rglob(f"{r['session_id']}.jsonl"))
            r["cli_version"] = version
        return runs

    def transcripts_codex(self, folder: Path) -> list[dict[str, Any]]:
        home = self.home("codex")
        work = home / "project"
        (work / "AGENTS.md").write_text("# Project notes\n\nKeep answers short.\n")
        answer_skill(work / ".agents" / "skills", "mango")
        env = self.codex_env(home)
        base = ["codex", "exec", "--json", "--skip-git-repo-check"]
        runs = [
            self.session_run(
                "codex",
                "plain",
                [*base, "say hello"],
                env,
                work,
                prompts=["say hello"],
                answers=["hello"],
                tool_calls=[],
                model_calls=1,
            ),
            self.session_run(
                "codex",
                "tool",
                [*base, "STUB_TOOL: echo from-tool"],
                env,
                work,
                prompts=["STUB_TOOL: echo from-tool"],
                answers=["hello | tool said: from-tool"],
                tool_calls=[
                    {"tool": "exec_command", "arguments": {"cmd": "echo from-tool"}, "result_contains": "from-tool"}
                ],
                model_calls=2,
            ),
            self.session_run(
                "codex",
                "skill",
                [*base, "$answer what now"],
                env,
                work,
                prompts=["$answer what now"],
                answers=["mango"],
                tool_calls=[],
                model_calls=1,
            ),
        ]
        first = self.session_run("codex", "resume", [*base, "first turn"], env, work)
        sid = _codex_sid(first["events"])
        second = self.session_run(
            "codex",
            "resume",
            ["codex", "exec", "resume", "--json", "--skip-git-repo-check", sid, "second turn"],
            env,
            work,
        )
        if _codex_sid(second["events"]) not in (sid, None):
            sys.exit(f"codex exec resume started a new session {_codex_sid(second['events'])} instead of {sid}")
        runs.append(
            {
                **first,
                "events": first["events"] + second["events"],
                "prompts": ["first turn", "second turn"],
                "answers": ["hello", "hello"],
                "tool_calls": [],
                "model_calls": 2,
                "argv": [first["argv"], second["argv"]],
            }
        )
        version = self.version("codex", env, work)
        self.copy_tree(home / ".codex" / "sessions", folder / "codex-home" / "sessions", _shorten_codex)
        for r in runs:
            r["session_id"] = _codex_sid(r["events"])
            # `turn.completed.usage` of `exec resume` is the thread's running total: the last one counts.
            done = [e.get("usage") for e in r["events"] if e.get("type") == "turn.completed"]
            r["reported_usage"] = _sum_usage(done[-1:], "input_tokens", "output_tokens")
            r["file"] = _only(folder.rglob(f"rollout-*{r['session_id']}.jsonl"))
            r["cli_version"] = version
        return runs

    def transcripts_openclaw(self, folder: Path) -> list[dict[str, Any]]:
        home = self.home("openclaw")
        work = home / "project"
        answer_skill(work / "skills", "papaya")
        env = self.openclaw_env(home)
        state = Path(env["OPENCLAW_STATE_DIR"])

        def argv(prompt: str) -> list[str]:
            return [
                "openclaw",
                "agent",
                "exec",
                prompt,
                "--json",
                "--timeout",
                "60",
                "--cwd",
                str(work),
                "--state-dir",
                str(state),
            ]

        runs = [
            self.session_run(
                "openclaw",
                "plain",
                argv("say hello"),
                env,
                work,
                prompts=["say hello"],
                answers=["hello"],
                tool_calls=[],
                model_calls=1,
            ),
            self.session_run(
                "openclaw",
                "tool",
                argv("STUB_TOOL: echo from-tool"),
                env,
                work,
                prompts=["STUB_TOOL: echo from-tool"],
                answers=["hello | tool said: from-tool"],
                tool_calls=[
                    {"tool": "exec", "arguments": {"command": "echo from-tool"}, "result_contains": "from-tool"}
                ],
                model_calls=2,
            ),
            self.session_run(
                "openclaw",
                "skill",
                argv("$answer what now"),
                env,
                work,
                prompts=["$answer what now"],
                answers=["papaya | tool said: Always answer with one word. SKILL_SAYS: papaya"],
                tool_calls=[
                    {
                        "tool": "read",
                        "arguments": {"path": "~/project/skills/answer/SKILL.md"},
                        "result_contains": "SKILL_SAYS: papaya",
                    }
                ],
                model_calls=2,
            ),
        ]
        version = self.version("openclaw", env, work)
        stores = sorted(state.glob("agents/*/agent/openclaw-agent.sqlite"))
        if not stores:
            sys.exit(f"openclaw wrote no transcript store under {state}/agents/*/agent/")
        for db in stores:
            rel = db.relative_to(state)
            self.copy_sqlite(db, folder / "state" / rel)
        for r in runs:
            out = r["events"][0]
            r["session_id"] = out["sessionId"]
            r["reported_usage"] = _sum_usage([out.get("usage")], "input", "output")
            r["file"] = folder / "state" / stores[0].relative_to(state)
            r["cli_version"] = version
        return runs

    def copy_tree(self, src: Path, dest: Path, shorten: Any) -> None:
        """Copies every file under `src`, paths rewritten in names and contents, JSONL lines shortened."""
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            target = dest / self.rw.text(str(path.relative_to(src)))
            target.parent.mkdir(parents=True, exist_ok=True)
            text = self.rw.text(path.read_text(encoding="utf-8"))
            if path.suffix == ".jsonl":
                lines = []
                for line in text.splitlines():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        lines.append(line)
                        continue
                    lines.append(json.dumps(shorten(rec), ensure_ascii=False, separators=(",", ":")))
                text = "\n".join(lines) + "\n"
            target.write_text(text, encoding="utf-8")

    def copy_sqlite(self, src: Path, dest: Path) -> None:
        """A one-file copy of a WAL store: checkpointed, paths rewritten in every JSON/text column,
        long strings outside the transcript itself shortened, vacuumed with small pages."""
        conn = sqlite3.connect(src)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        conn = sqlite3.connect(dest)
        conn.execute("PRAGMA journal_mode=DELETE")  # one file, and readers of the fixture create no -wal/-shm

        def rewrite(value: Any, shorten: int) -> Any:
            if not isinstance(value, str):
                return value
            if shorten and value.startswith("{"):
                try:
                    return json.dumps(
                        self.rw.value(_omit(json.loads(value))), ensure_ascii=False, separators=(",", ":")
                    )
                except ValueError:
                    pass
            return self.rw.text(value)

        conn.create_function("rewrite", 2, rewrite, deterministic=True)
        # CHECK constraints of the store call octet_length(), which SQLite < 3.43 lacks.
        conn.create_function("octet_length", 1, _octets, deterministic=True)
        virtual = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")}
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        ]
        for table in tables:
            if any(table.startswith(v + "_") for v in virtual):
                continue  # full-text index internals: changed through their virtual table only
            shorten = 0 if table == "transcript_events" else 1  # the transcript itself stays verbatim
            for _, col, ctype, *_ in conn.execute(f'PRAGMA table_info("{table}")').fetchall():
                if ctype.upper() in ("TEXT", ""):
                    conn.execute(
                        f'UPDATE "{table}" SET "{col}" = rewrite("{col}", ?) '
                        f'WHERE typeof("{col}") = \'text\' AND rewrite("{col}", ?) IS NOT "{col}"',
                        (shorten, shorten),
                    )
        conn.commit()
        conn.execute("PRAGMA page_size = 1024")  # a store of ~100 mostly empty tables: small pages
        conn.execute("VACUUM")
        conn.close()

    def record_transcripts(self, agent: str) -> None:
        folder = OUT / agent
        for sub in [p for p in folder.iterdir() if p.name != "stdout"] if folder.is_dir() else []:
            shutil.rmtree(sub) if sub.is_dir() else sub.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        runs = getattr(self, f"transcripts_{agent}")(folder)
        manifest_path = OUT / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        manifest.setdefault("transcripts", [])
        manifest["transcripts"] = [t for t in manifest["transcripts"] if t["agent"] != agent]
        for r in runs:
            r.pop("events")
            r["file"] = str(Path(r["file"]).relative_to(OUT))
            r.setdefault("commands", [])
            r["expect"] = {
                "user_prompts": len(r["prompts"]),
                "tool_calls": len(r["tool_calls"]),
                "assistant_turns": len(r["answers"]),
            }
            manifest["transcripts"].append(self.rw.value(r))
        manifest["transcripts"].sort(key=lambda t: (AGENTS.index(t["agent"]), t["file"], t["session_id"]))
        manifest["stub"] = {"model": "stub-model", "usage_in": USAGE_IN, "usage_out": USAGE_OUT}
        manifest.setdefault("versions", {})[agent] = self.versions[agent]
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _claude_sid(events: list[dict[str, Any]]) -> str:
    return next(e["session_id"] for e in events if e.get("session_id"))


def _codex_sid(events: list[dict[str, Any]]) -> str | None:
    return next((e["thread_id"] for e in events if e.get("type") == "thread.started"), None)


def _only(found: Any) -> Path:
    paths = sorted(found)
    if len(paths) != 1:
        sys.exit(f"expected one transcript file, found {paths}")
    return paths[0]


def _sum_usage(blocks: list[Any], inp: str, out: str) -> dict[str, int]:
    good = [b for b in blocks if isinstance(b, dict)]
    return {
        "input_tokens": sum(int(b.get(inp) or 0) for b in good),
        "output_tokens": sum(int(b.get(out) or 0) for b in good),
    }


def _octets(value: Any) -> int | None:
    if value is None:
        return None
    return len(
        value.encode() if isinstance(value, str) else bytes(value) if isinstance(value, bytes) else str(value).encode()
    )


def _omit(value: Any) -> Any:
    """`value` with every string longer than LONG replaced by a short note."""
    if isinstance(value, str) and len(value) > LONG:
        return f"[omitted: {len(value)} characters of the agent's built-in prompt]"
    if isinstance(value, list):
        return [_omit(v) for v in value]
    if isinstance(value, dict):
        return {k: _omit(v) for k, v in value.items()}
    return value


def _shorten_claude(rec: Any) -> Any:
    """Claude Code's built-in prompt (attachments, system and api-request records) cut short."""
    if not isinstance(rec, dict):
        return rec
    kind = str(rec.get("type"))
    if kind in ("attachment", "system") or kind.startswith("api-request") or rec.get("isMeta") is True:
        return _omit(rec)
    return rec


def _shorten_codex(rec: Any) -> Any:
    """Codex's base instructions and developer messages cut short; user and tool items kept."""
    if not isinstance(rec, dict):
        return rec
    payload = rec.get("payload")
    if rec.get("type") in ("session_meta", "turn_context"):
        return _omit(rec)
    if rec.get("type") == "response_item" and isinstance(payload, dict) and payload.get("role") == "developer":
        return _omit(rec)
    return rec


def install_agents() -> Path:
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install-agents.sh")], cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"install-agents.sh failed:\n{proc.stderr[-2000:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def record_agents(doc: str | None, agents: list[str], make: Any, argv: list[str] | None = None) -> int:
    """A recording script's main: `--agent` (repeatable) picks from `agents`; `make(bin_dir, tmp, server)`
    builds the recorder whose `record(cli)` records one agent and whose `summary` lines are printed."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", choices=agents, action="append", help="record only this agent (repeatable)")
    args = parser.parse_args(argv)
    bin_dir = install_agents()
    with tempfile.TemporaryDirectory(prefix="skillsleep-rec-") as tmp, AgentServer(port=0) as server:
        rec = make(bin_dir, Path(tmp).resolve(), server)
        for cli in args.agent or agents:
            rec.record(cli)
        print("\n".join(rec.summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("stdout", "transcripts"), help="record only this part")
    parser.add_argument("--agent", choices=AGENTS, action="append", help="record only this agent (repeatable)")
    args = parser.parse_args(argv)
    agents = args.agent or list(AGENTS)
    parts = [args.only] if args.only else ["stdout", "transcripts"]
    bin_dir = install_agents()
    if not args.only and not args.agent:  # a full recording starts from an empty folder (README.md stays)
        for path in OUT.iterdir() if OUT.is_dir() else []:
            if path.name != "README.md":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    OUT.mkdir(parents=True, exist_ok=True)
    # Outside any git repository, so no agent records this checkout's git state.
    with tempfile.TemporaryDirectory(prefix="skillsleep-rec-") as tmp, AgentServer(port=0) as server:
        rec = Recorder(bin_dir, Path(tmp).resolve(), server)
        for part in parts:
            for agent in agents:
                getattr(rec, f"record_{part}")(agent)
        print("recorded into", OUT.relative_to(ROOT))
        print("\n".join(rec.summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
