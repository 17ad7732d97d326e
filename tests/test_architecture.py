"""The rules of docs/ARCHITECTURE.md, enforced by walking the code: imports flow one way, no command
module imports another, files and functions stay short."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core": 0, "harnesses": 1, "slash_commands": 2}
VENDOR_SDKS = {"openai", "anthropic", "ollama", "xllamacpp", "llama_cpp"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            out.append((layer, path))
    return out


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_layers_only_import_downwards() -> None:
    problems = []
    for layer, path in _modules():
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] in LAYERS:
                problems.append(f"{path.relative_to(ROOT)} imports {name!r}: use 'skillsleep.{name}'")
            if parts[0] == "skillsleep" and len(parts) > 1 and parts[1] in LAYERS and LAYERS[parts[1]] > LAYERS[layer]:
                problems.append(f"{path.relative_to(ROOT)} ({layer}) imports upward: {name}")
    assert not problems, "\n".join(problems)


# core's subpackages, lowest first: a module imports only its own subpackage and those before it.
CORE_ORDER = ("shared", "document", "privacy", "models", "harvest", "train", "mine", "report", "night")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(["skillsleep", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _all_imports(path: Path) -> set[str]:
    """Every module of the package that the file at `path` names in an import, at any depth (inside a
    function, under TYPE_CHECKING), relative imports resolved; `from p import m` names `p.m` if it is one."""
    known = {_module_name(p) for _, p in _modules()}
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != own and not own.startswith(name + "."):  # a package's __init__ is no edge
                found.add(name)
    return found


def test_core_subpackages_import_one_way() -> None:
    """docs/ARCHITECTURE.md: shared ← document ← privacy ← models ← harvest ← train ← mine ← report ← night."""
    folders = sorted(p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(CORE_ORDER), "a core subpackage is missing from CORE_ORDER (or gone from core/)"
    assert [p.name for p in (ROOT / "core").glob("*.py")] == ["__init__.py"], "every core module lives in a subpackage"
    rank = {name: i for i, name in enumerate(CORE_ORDER)}
    problems = []
    for path in (ROOT / "core").rglob("*.py"):
        mine = path.relative_to(ROOT / "core").parts[0]
        for name in _all_imports(path):
            parts = name.split(".")
            if parts[:2] == ["skillsleep", "core"] and len(parts) > 2 and rank[parts[2]] > rank.get(mine, -1):
                problems.append(f"{_rel(path)} ({mine}) imports {name} ({parts[2]} comes later in CORE_ORDER)")
    assert not problems, "\n".join(sorted(problems))


# Import cycles, each with its reason; a stale entry fails the test, so the list only shrinks.
CYCLE_EXCEPTIONS: set[tuple[str, ...]] = set()


def _cycles() -> set[tuple[str, ...]]:
    """The strongly connected groups (of two or more modules) of the package's import graph."""
    graph = {_module_name(p): _all_imports(p) for _, p in _modules()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.add(tuple(sorted(group)))

    for v in graph:
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or round a loop, not even inside a function."""
    cycles = _cycles()
    problems = [f"import cycle: {' → '.join(c)}" for c in sorted(cycles - CYCLE_EXCEPTIONS)]
    problems += [f"{c}: no longer a cycle; remove it from CYCLE_EXCEPTIONS" for c in CYCLE_EXCEPTIONS - cycles]
    assert not problems, "\n".join(problems)


def test_vendor_sdks_are_imported_only_in_core_backends() -> None:
    problems = []
    for _, path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        for name in _imports(path):
            if name.split(".")[0] in VENDOR_SDKS and not rel.startswith("core/models/backends/"):
                problems.append(f"{rel} imports {name}")
    assert not problems, "\n".join(problems)


def test_vendor_sdk_imports_in_backends_are_lazy() -> None:
    """Module-level SDK imports would load every SDK for `skillsleep --help`."""
    problems = []
    for path in (ROOT / "core" / "models" / "backends").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            problems += [f"{path.name}: {n}" for n in names if n.split(".")[0] in VENDOR_SDKS]
    assert not problems, "module-level SDK imports: " + ", ".join(problems)


FORBIDDEN_IN_CORE = {
    ("os", "environ"),
    ("os", "getenv"),
    ("os", "putenv"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "execv"),
    ("os", "spawnv"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
}


def test_ray_is_imported_only_through_its_typed_seam() -> None:
    """`mypy` passes without the `ray` extra: no module imports Ray with an import statement, deferred
    or not; harnesses/ray_api.py imports it by name and types the few calls the executor makes."""
    found = [
        f"{path.relative_to(ROOT).as_posix()} imports {name}"
        for _, path in _modules()
        for name in _imports(path)
        if name == "ray" or name.startswith("ray.")
    ]
    assert not found, "\n".join(found) + " (call it through harnesses/ray_api.py)"


def test_engine_reads_no_environment_and_spawns_no_process() -> None:
    problems = []
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        rel = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in FORBIDDEN_IN_CORE
            ):
                problems.append(f"{rel}:{node.lineno} uses {node.value.id}.{node.attr}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.module == "os":
                    names = [f"os.{a.name}" for a in node.names]
                for name in names:
                    if name.split(".")[0] == "subprocess" or name in {"os.environ", "os.getenv", "os.system"}:
                        problems.append(f"{rel}:{node.lineno} imports {name}")
    assert not problems, "\n".join(problems)


def test_no_python_files_at_the_repository_root() -> None:
    assert not list(ROOT.glob("*.py"))


def test_every_tracked_link_points_inside_the_repository() -> None:
    """A link to a machine's own folder (a worktree's `.tools`) once reached main and broke CI."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no tracked links to read")
    listing = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True)
    links = [line.split("\t", 1)[1] for line in listing.stdout.splitlines() if line.startswith("120000 ")]
    outside = []
    for rel in links:
        target = (ROOT / rel).parent / Path((ROOT / rel).readlink())
        if (ROOT / rel).readlink().is_absolute() or not target.resolve().is_relative_to(ROOT):
            outside.append(f"{rel} -> {(ROOT / rel).readlink()}")
    assert links, "the repository tracks its .typecheck links; none were listed"
    assert not outside, "tracked links leave the repository: " + ", ".join(outside)


def test_help_imports_no_vendor_sdk() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from skillsleep.slash_commands.cli import main\n"
        "for args in (['--help'], ['train', '--help'], ['eval', '--help'], ['backends', '--help']):\n"
        "    r = CliRunner().invoke(main, args)\n"
        "    assert r.exit_code == 0, r.output\n"
        f"loaded = sorted(m for m in {sorted(VENDOR_SDKS)!r} if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# Where an agent's name (or its CLI's, as in an argv) may be written as a value: its own package,
# where it is defined once. Every other module asks the registry. The exceptions, with their reason:
AGENT_NAME_EXCEPTIONS = {
    # `skillsleep schedule --openclaw`: OpenClaw's cron is one of the places a schedule can live, a
    # scheduler chosen by its own switch (like --crontab, --systemd), declared when the CLI is
    # imported, which loads no agent (schedulers.py reaches the cron through the agent record)
    ("slash_commands/schedule_cmd.py", "openclaw"),
}


def test_agent_names_are_written_only_in_their_own_package() -> None:
    from skillsleep.harnesses import registry

    owners: dict[str, set[Path]] = {}
    for agent in registry.agents():
        package = Path(sys.modules[agent.parser.__module__].__file__ or "").parent
        for word in (agent.name, agent.command):
            owners.setdefault(word, set()).add(package)
    problems = []
    for _, path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            word = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            if word not in owners or (rel, word) in AGENT_NAME_EXCEPTIONS:
                continue
            if not any(path.is_relative_to(package) for package in owners[word]):
                problems.append(f"{rel}:{node.lineno} names the agent {word!r}: ask harnesses/registry.py")
    assert not problems, "\n".join(problems)


# --- the command layer and the size of things (docs/ARCHITECTURE.md) ---------------------------------

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60

# Each exception with its reason; a stale one (now within the rule, or gone) fails the tests below,
# so these lists only shrink.
COMMAND_IMPORT_EXCEPTIONS = {}
LONG_FILE_EXCEPTIONS = {}
LONG_FUNCTION_EXCEPTIONS = {}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _command_modules() -> list[Path]:
    return sorted((ROOT / "slash_commands").glob("*_cmd.py"))


def _commands_imported(path: Path) -> list[str]:
    """The command modules (`*_cmd`) that the module at `path` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if node.level == 0 else f"skillsleep.slash_commands.{node.module}"
            found += [module] + [f"{module}.{a.name}" for a in node.names]
    return sorted(
        {
            n.removeprefix("skillsleep.slash_commands.")
            for n in found
            if re.fullmatch(r"skillsleep\.slash_commands\.\w+_cmd", n)
        }
    )


def _functions() -> list[tuple[str, int]]:
    """`path::name` and length in lines of every function and method, nested ones included."""
    out = []
    for _, path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((f"{_rel(path)}::{node.name}", (node.end_lineno or node.lineno) - node.lineno + 1))
    return out


def _stale(exceptions: dict[str, str], breaking: set[str]) -> list[str]:
    return [
        f"{key}: no longer breaks the rule; remove it from the exceptions" for key in exceptions if key not in breaking
    ]


def test_no_command_module_imports_another() -> None:
    """What command modules share lives in a non-command module (output.py, guard.py, harvester.py, …)."""
    breaking = {}
    for path in _command_modules():
        others = [m for m in _commands_imported(path) if m != path.stem]
        if others:
            breaking[_rel(path)] = others
    problems = [
        f"{rel} imports the command module(s) {', '.join(others)}: move what they share into a non-command module"
        for rel, others in breaking.items()
        if rel not in COMMAND_IMPORT_EXCEPTIONS
    ]
    problems += _stale(COMMAND_IMPORT_EXCEPTIONS, set(breaking))
    assert not problems, "\n".join(problems)


def test_every_package_file_is_at_most_400_lines() -> None:
    lengths = {_rel(path): len(path.read_text().splitlines()) for _, path in _modules()}
    breaking = {rel for rel, n in lengths.items() if n > MAX_FILE_LINES}
    problems = [
        f"{rel} has {lengths[rel]} lines (at most {MAX_FILE_LINES}): split it by concept"
        for rel in sorted(breaking - set(LONG_FILE_EXCEPTIONS))
    ]
    problems += _stale(LONG_FILE_EXCEPTIONS, breaking)
    assert not problems, "\n".join(problems)


def test_every_function_is_at_most_60_lines() -> None:
    long = {key: n for key, n in _functions() if n > MAX_FUNCTION_LINES}
    problems = [
        f"{key} has {n} lines (at most {MAX_FUNCTION_LINES}): extract well-named helpers"
        for key, n in sorted(long.items())
        if key not in LONG_FUNCTION_EXCEPTIONS
    ]
    problems += _stale(LONG_FUNCTION_EXCEPTIONS, set(long))
    assert not problems, "\n".join(problems)


def test_help_imports_no_engine() -> None:
    """`skillsleep --help` stays fast: the group imports a verb's module only when that verb is used."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from skillsleep.slash_commands.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = ('skillsleep.core', 'skillsleep.harnesses', 'pydantic')  # the engine, its records\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# What a verb's --help may load besides click: the two leaf modules every command's wrapper uses
# (errors → exit codes and messages, display → safe text), and nothing of the engine.
HELP_LEAVES = (
    "skillsleep.core",
    "skillsleep.core.shared",
    "skillsleep.core.shared.errors",
    "skillsleep.core.shared.display",
)
ENGINE = ("skillsleep.core", "skillsleep.harnesses", "pydantic", "rich")


def _loaded_by(code: str) -> set[str]:
    """The engine modules (ENGINE, less HELP_LEAVES) loaded after running `code` in a fresh interpreter."""
    probe = code + (
        "\nimport json, sys\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({ENGINE!r}) and m not in {HELP_LEAVES!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_every_verbs_help_imports_no_engine() -> None:
    """`skillsleep <verb> --help` loads no engine either: a command module imports the modules that
    do its work inside the command. A verb whose flags take or name harnesses or providers (`run
    --harness`, `install [claude-code|…]`, `run --backend`) loads what lists them (the agent registry,
    the built-in providers' names), and nothing more: no backend."""
    from skillsleep.slash_commands.choices import Names, NamesHelp, NamesMetavar
    from skillsleep.slash_commands.cli import VERBS, main

    registry = _loaded_by(
        "from skillsleep.slash_commands import choices\n"
        "choices.harnesses(), choices.agents_then_chat(), choices.hook_agents(), choices.agents_or_all()\n"
        "choices.providers()"
    )
    assert not {m for m in registry if m.startswith("skillsleep.core.models.backends.")} - {
        "skillsleep.core.models.backends.base",  # an agent's settings hold a server URL (BaseUrl)
        "skillsleep.core.models.backends.builtin",
    }
    problems = []
    for verb in VERBS:
        loaded = _loaded_by(
            "from click.testing import CliRunner\n"
            "from skillsleep.slash_commands.cli import main\n"
            f"r = CliRunner().invoke(main, [{verb!r}, '--help'])\n"
            "assert r.exit_code == 0, r.output"
        )
        command = main.commands[verb]
        names = any(isinstance(p.type, (Names, NamesMetavar)) or isinstance(p, NamesHelp) for p in command.params)
        extra = loaded - registry if names else loaded
        if extra:
            problems.append(f"{verb} --help loads {sorted(extra)[:8]} ({len(extra)} modules)")
    assert not problems, "\n".join(problems)
