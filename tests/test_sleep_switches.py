"""Every switch of `skillsleep run`, by its effect on a night (scripted backend, chat harness).

Each test runs one or two whole nights through the command line (tests/sleep_kit.py) and checks
what the switch changed: the verdict, what was staged or written, which model calls were made and
what they were shown, the plan's tasks, the files of the night's folder.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from servers import Action, FaultServer
from sleep_kit import (
    DREAM,
    RULE,
    TASKS,
    Recorder,
    corrected_session,
    invoke,
    night_env,
    optimizer_rules,
    run_args,
    run_night,
    write_chat_logs,
    write_scripts,
)

from skillsleep.core.models.backends.registry import default_prices
from skillsleep.core.models.ledger import price_of
from skillsleep.core.models.llm import estimate_usage
from skillsleep.core.shared.records import CompletionRequest

SEED = "# Replies\n\nBe helpful and finish the task.\n"
BRIEF = "Be brief."
USELESS = [{"kind": "skill_defect", "diagnosis": "too long", "op": "add", "target": "", "content": BRIEF}]


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data dir, the scripted models (reflection: add RULE) and chat logs in which the
    six kit tasks recur three times each; the current directory is `tmp_path`."""
    night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    return tmp_path


def fresh_root(root: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """root/name: a second, empty data dir with root's scripts and fresh chat logs (another first night)."""
    other = root / name
    night_env(monkeypatch, other)
    write_chat_logs(other / "chats")
    for name in ("opt.json", "target.json"):
        (other / name).write_text((root / name).read_text())
    return other


def user_skill(root: Path) -> Path:
    """A live skill file of the user's (the managed skill does not exist before its first adopt)."""
    path = root / "skills" / "replies" / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SEED)
    return path


def write_rules(root: Path, rules: list[dict[str, str]]) -> None:
    (root / "opt.json").write_text(json.dumps(rules))


def replace_rule(rules: list[dict[str, str]], match: str, reply: dict[str, Any]) -> list[dict[str, str]]:
    assert any(r["match"] == match for r in rules), match
    return [{"match": r["match"], "reply": json.dumps(reply)} if r["match"] == match else r for r in rules]


def plan(root: Path, night: int = 1) -> dict[str, Any]:
    return dict(json.loads((root / "data" / "nights" / f"{night:04d}" / "plan.json").read_text()))


def state(root: Path, night: int = 1) -> dict[str, Any]:
    return dict(json.loads((root / "data" / "nights" / f"{night:04d}" / "state.json").read_text()))


def night_record(root: Path, night: int = 1) -> dict[str, Any]:
    return dict(json.loads((root / "data" / "nights" / f"{night:04d}" / "night.json").read_text()))


def proposals(root: Path) -> list[dict[str, Any]]:
    staging = root / "data" / "staging"
    if not staging.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(staging.glob("*/proposal.json"))]


def staged_skill(root: Path, proposal: dict[str, Any]) -> str:
    return (root / "data" / "staging" / proposal["id"] / "SKILL.md").read_text()


def real_prompts(p: dict[str, Any]) -> set[str]:
    """The prompts of the plan's real tasks (the ones given a split)."""
    return {m["task"]["prompt"] for m in p["mined"]["tasks"] if m["task"]["id"] in p["splits"]}


def target_samples(rec: Recorder) -> dict[str, set[int]]:
    """Per task prompt (the last user message), the sample indexes the target was asked for."""
    out: dict[str, set[int]] = {}
    for role, request in rec.seen:
        if role == "target":
            prompt = [m.content for m in request.messages if m.role == "user"][-1]
            out.setdefault(prompt, set()).add(request.sample)
    return out


def roles(rec: Recorder) -> Counter[str]:
    return Counter(role for role, _ in rec.seen)


# --- --gate and --gate-metric ---------------------------------------------------------------------


def test_gate_on_rejects_a_useless_edit_and_stages_nothing(root: Path) -> None:
    write_scripts(root, findings=USELESS)
    skill = user_skill(root)
    s = run_night(root, "--skill", str(skill), "--gate", "on")
    assert s["outcome"] == "rejected"
    assert "no improvement" in s["reason"] or "no candidate passed" in s["reason"]
    assert s["baseline"] == s["candidate"] == 0.0
    assert s["accepted_edits"] == 0 and s["rejected_edits"] >= 1
    for p in proposals(root):  # none, or one marked not accepted that lacks the rejected line
        assert p["accepted"] is False and BRIEF not in staged_skill(root, p)
    assert skill.read_text() == SEED


def test_gate_off_stages_the_useless_edit_as_accepted(root: Path) -> None:
    write_scripts(root, findings=USELESS)
    skill = user_skill(root)
    s = run_night(root, "--skill", str(skill), "--gate", "off")
    assert s["outcome"] == "accepted"
    assert "gate off" in s["reason"]
    [p] = proposals(root)
    assert p["id"] == s["proposal"] and p["accepted"] is True and "gate off" in p["reason"]
    assert BRIEF in staged_skill(root, p)
    assert skill.read_text() == SEED  # staged, not adopted


def three_check_judge(root: Path) -> None:
    """Every task judged by three checks: the answer line (only a skill holding RULE passes it),
    "Done." (always passes) and a sign-off no reply has (never passes). The candidate passes one
    check more than the live skill: soft 1/3 → 2/3, while hard stays 0 → 0."""
    judge = {
        "rubric": "",
        "checks": [
            {"type": "last_line_regex", "value": "^ANSWER: .+", "feedback": "the last line must be `ANSWER: <answer>`"},
            {"type": "contains", "value": "Done.", "feedback": "the reply must say `Done.`"},
            {"type": "contains", "value": "Reviewed-by:", "feedback": "the reply must carry a `Reviewed-by:` line"},
        ],
    }
    write_rules(root, replace_rule(optimizer_rules(), '"mine_judge"', judge))
    # the user's corrections name all three, so grounding keeps the checks
    write_chat_logs(
        root / "chats", correction="no: say Done., sign it Reviewed-by: and put the answer on its own last line"
    )


def test_gate_metric_soft_accepts_what_hard_rejects(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    three_check_judge(root)
    soft = run_night(root, "--gate-metric", "soft", "--steps", "1")
    assert soft["outcome"] == "accepted", soft["reason"]
    assert soft["baseline"] == pytest.approx(1 / 3) and soft["candidate"] == pytest.approx(2 / 3)
    assert soft["proposal"] is not None

    other = fresh_root(root, "other", monkeypatch)
    three_check_judge(other)
    hard = run_night(other, "--gate-metric", "hard", "--steps", "1")
    assert hard["outcome"] == "rejected"
    assert hard["baseline"] == 0.0 and hard["candidate"] == 0.0
    assert "ties are rejected" in hard["reason"] or "no candidate passed" in hard["reason"]
    # what is staged (the epoch's slow-update guidance, a tie) is marked not accepted, without RULE
    for p in proposals(other):
        assert p["accepted"] is False and RULE not in staged_skill(other, p)


def test_gate_metric_mixed_weighs_hard_and_soft(root: Path) -> None:
    three_check_judge(root)
    s = run_night(root, "--gate-metric", "mixed", "--steps", "1")
    assert s["outcome"] == "accepted"
    # mixed = 0.5·hard + 0.5·soft: 0.5·0 + 0.5·(1/3) → 0.5·0 + 0.5·(2/3)
    assert s["baseline"] == pytest.approx(1 / 6) and s["candidate"] == pytest.approx(1 / 3)


# --- --rollouts-k, --preferences ---------------------------------------------------------------


def test_rollouts_k_2_asks_the_target_for_two_samples_of_every_task(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder(monkeypatch)
    run_night(root, "--rollouts-k", "2", "--steps", "1")
    samples = target_samples(rec)
    assert samples and all(v == {0, 1} for v in samples.values()), samples


def test_rollouts_k_defaults_to_one_sample(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(monkeypatch)
    run_night(root, "--steps", "1")
    samples = target_samples(rec)
    assert samples and all(v == {0} for v in samples.values()), samples


def test_preferences_reach_every_reflect_request(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(monkeypatch)
    run_night(root, "--preferences", "Prefer bullet lists")
    reflect = rec.texts("reflect")
    assert len(reflect) >= 2  # both steps reflected
    assert all("Prefer bullet lists" in t for t in reflect)
    assert not any("Prefer bullet lists" in t for t in rec.texts("target", "mine"))


# --- --candidates ------------------------------------------------------------------------------


def test_candidates_let_another_strategy_pass_when_a_harmful_edit_sinks_the_clip(root: Path) -> None:
    finding = {"kind": "skill_defect", "diagnosis": "d", "op": "add", "target": ""}
    findings = [{**finding, "content": "Reply in French only."}, {**finding, "content": RULE}]
    write_rules(root, replace_rule(optimizer_rules(), '"findings"', {"findings": findings}))
    rules = json.loads((root / "target.json").read_text())
    (root / "target.json").write_text(json.dumps([{"match": "French", "reply": "Bonjour."}, *rules]))
    assert run_night(root, "--steps", "1", "--dreams", "0")["outcome"] == "rejected"  # the clip fails
    s = run_night(root, "--steps", "1", "--dreams", "0", "--candidates", "3")
    assert s["outcome"] == "accepted"
    [p] = [p for p in proposals(root) if p["id"] == s["proposal"]]
    # candidate 2, the quoted-literal form of what the judges require, passes (core/train/strategies.py)
    assert "End every reply with a line starting with `ANSWER:`." in staged_skill(root, p)
    assert "French" not in staged_skill(root, p)


def test_candidates_outside_1_to_8_is_a_usage_error(root: Path) -> None:
    code, _, err = invoke(*run_args(root, "--candidates", "9"))
    assert code == 2 and "--candidates" in err


# --- budgets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("budget", "stage"), [(3000, "planning"), (15000, "training")])
def test_budget_tokens_stops_the_night_cleanly(root: Path, budget: int, stage: str) -> None:
    """A whole night takes ~13k tokens, and each call reserves its pessimistic estimate (~2k) first:
    3000 stops while the tasks are mined, 15000 once training has begun. Either way the night
    ends cleanly (exit 1), with a report that says what to do and nothing staged or adopted."""
    skill = user_skill(root)
    code, out, err = invoke(
        *run_args(root, "--skill", str(skill), "--budget-tokens", str(budget), "--auto-adopt", "--json")
    )
    assert code == 1, err
    s = json.loads(out)
    assert s["outcome"] == "stopped-early"
    assert s["stop"]["kind"] == "budget" and "--budget-tokens" in s["stop"]["message"]
    assert s["tokens"] <= budget and s["adopted"] is False
    folder = root / "data" / "nights" / "0001"
    if stage == "planning":
        assert not (folder / "plan.json").exists() and "target" not in s["calls_by_role"]
    else:
        assert (folder / "plan.json").is_file() and state(root)["done"] is False
        assert s["calls_by_role"]["target"]["calls"] > 0
    assert s["proposal"] is None and proposals(root) == []
    assert skill.read_text() == SEED
    report = (root / "data" / "nights" / "0001" / "report.md").read_text()
    assert "What to do:" in report and "--budget-tokens" in report
    assert night_record(root)["status"] == "stopped"


def test_budget_usd_stops_a_priced_backend(
    root: Path, monkeypatch: pytest.MonkeyPatch, fault_server: FaultServer
) -> None:
    """DeepSeek's default model has a price: the ledger reserves each call's upper-bound estimate
    before sending it, so the night stops before a call that could pass the cap."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-dummy")
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    # one JSON reply every role can read (each reads only its own keys)
    fault_server.default = Action(
        text=json.dumps(
            {
                "groups": [],
                "checks": [{"type": "contains", "value": "ok", "feedback": "say ok"}],
                "rubric": "",
                "relevant": list(range(1, 41)),
                "variants": [DREAM],
                "findings": [],
                "order": [1],
                "guidance": [],
                "notes": [],
            }
        )
    )
    price = default_prices()["deepseek:deepseek-v4-flash"]
    assert price.input > 0 and price.output > 0
    # what a target call reserves at least: no text in, its 2048-token reply limit
    target_call = price_of(
        default_prices(),
        "deepseek",
        "deepseek-v4-flash",
        estimate_usage(CompletionRequest(model="deepseek-v4-flash", messages=[], max_tokens=2048)),
    )
    # the paraphrase merge (a short prompt, a 1024-token reply) fits; the judge writing's estimate
    # (each prompt holds a task's sessions, every byte of it reserved as a token) does not fit even alone
    budget = 1.5 * target_call
    # a paraphrase of a kit task, so the optimizer's paraphrase merge (alone, before the judges) is asked
    write_chat_logs(root / "chats", extra=["Why did the CI job fail on the docs?"])
    code, out, err = invoke(
        "run",
        "--backend",
        "deepseek",
        "--base-url",
        f"{fault_server.url}/v1",
        "--since",
        "3650d",
        "--budget-usd",
        str(budget),
        "--json",
    )
    assert code == 1, err
    s = json.loads(out)
    assert s["outcome"] == "stopped-early" and s["stop"]["kind"] == "budget"
    assert "--budget-usd" in s["stop"]["message"]
    next_call = float(re.search(r"may cost ~\$([0-9.]+)", s["stop"]["message"]).group(1))  # type: ignore[union-attr]
    assert next_call > 0  # the next call's estimate, reserved before sending
    # reserved before sending, so the spend never passes the cap (not even by one call)
    assert 0 < s["cost_usd"] <= budget
    posts = fault_server.posts()
    assert posts and all(p.body["model"] == "deepseek-v4-flash" for p in posts)
    assert all(p.headers.get("authorization") == "Bearer sk-test-dummy" for p in posts)
    assert all(p.path.endswith("/v1/chat/completions") for p in posts)
    assert s["calls_made"] == len(posts)
    assert proposals(root) == []


# --- what a night mines --------------------------------------------------------------------------


def test_max_tasks_caps_the_real_tasks_of_the_plan(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = run_night(root, "--max-tasks", "3", "--steps", "1")
    p = plan(root)
    assert len(p["splits"]) == len(real_prompts(p)) == 3
    assert len(p["cut"]) == len(TASKS) - 3
    assert s["tasks"]["train"] + s["tasks"]["val"] + s["tasks"]["test"] - s["tasks"]["dream"] == 3
    unlimited = fresh_root(root, "unlimited", monkeypatch)
    run_night(unlimited, "--steps", "1")
    assert len(plan(unlimited)["splits"]) == len(TASKS)


def chat_logs_by_age(folder: Path, tasks: list[str], days_ago: list[int], tag: str) -> None:
    """Each task asked once per entry of `days_ago` (a session each, with a correction), dated that
    many days before now: the dates follow the clock, so --since 7d means the same on any day."""
    now = datetime.now(UTC)
    lines = []
    for rep, days in enumerate(days_ago):
        for i, t in enumerate(tasks):
            created = (now - timedelta(days=days, minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
            lines.append(corrected_session(f"{tag}{rep}-{i}", created, t))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{tag}.jsonl").write_text("\n".join(lines) + "\n")


def test_since_leaves_older_sessions_unmined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old, recent = TASKS[:3], TASKS[3:]
    for name, since in (("span", "7d"), ("iso", (datetime.now(UTC) - timedelta(days=90)).date().isoformat())):
        root = tmp_path / name
        write_scripts(root)
        chat_logs_by_age(root / "chats", old, [40, 41, 42], "old")
        chat_logs_by_age(root / "chats", recent, [1, 2, 3], "new")
        with monkeypatch.context() as mp:
            night_env(mp, root)
            s = run_night(root, "--since", since, "--steps", "1")
        p = plan(root)
        if name == "span":  # only the last week: the old tasks are not mined at all
            assert s["sessions"] == 9
            assert {m["task"]["prompt"] for m in p["mined"]["tasks"]} == set(recent)
            assert real_prompts(p) == set(recent)
        else:  # an ISO date 90 days back: both
            assert s["sessions"] == 18
            assert real_prompts(p) == set(TASKS)


def test_min_recurrence_above_the_repeats_finds_no_task(root: Path) -> None:
    s = run_night(root, "--min-recurrence", "4")
    assert s["outcome"] == "no-candidate"
    assert "no task recurred 4+ times" in s["reason"] and "--min-recurrence" in s["reason"]
    assert s["recurring_tasks"] == 0 and s["proposal"] is None
    assert not (root / "data" / "staging").exists()
    # three repeats are enough for --min-recurrence 3
    again = run_night(root, "--min-recurrence", "3", "--steps", "1")
    assert again["recurring_tasks"] == len(TASKS) and again["outcome"] == "accepted"


# --- training shape ------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [1, 2])
def test_steps_sets_the_steps_of_the_night(root: Path, steps: int) -> None:
    write_scripts(root, unsolved=True)  # step 1's rule leaves a held-out task failing: step 2 runs
    run_night(root, "--steps", str(steps))
    st = state(root)
    assert len(st["steps"]) == steps and st["done"] is True
    folders = sorted(p.name for p in (root / "data" / "nights" / "0001" / "steps").iterdir())
    assert folders == [f"e0s{n}" for n in range(steps)]


def test_dreams_0_dreams_nothing(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(monkeypatch)
    s = run_night(root, "--dreams", "0", "--steps", "1")
    assert roles(rec)["dream"] == 0
    assert s["tasks"]["dream"] == 0 and plan(root)["dreams"] == []


def test_dreams_2_gives_up_to_two_variants_per_training_task(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variants = [DREAM, "Do it again, but for the release branch this time", "Same again for the hotfix branch, please"]
    write_rules(root, replace_rule(optimizer_rules(), '"dream"', {"variants": variants}))
    rec = Recorder(monkeypatch)
    s = run_night(root, "--dreams", "2", "--steps", "1")
    p = plan(root)
    train_real = [t for t, split in p["splits"].items() if split == "train"]
    per_task = Counter(d["id"].split("~dream")[0] for d in p["dreams"])
    assert roles(rec)["dream"] == len(train_real)
    assert set(per_task) == set(train_real) and set(per_task.values()) == {2}
    assert {d["prompt"] for d in p["dreams"]} == set(variants[:2])
    assert all(d["origin"] == "dream" and d["split"] == "train" for d in p["dreams"])
    assert s["tasks"]["dream"] == 2 * len(train_real)


# --- --auto-adopt, --dry-run ----------------------------------------------------------------------


def test_auto_adopt_writes_the_live_skill_and_rollback_undoes_it(root: Path) -> None:
    skill = user_skill(root)
    s = run_night(root, "--skill", str(skill), "--auto-adopt")
    assert s["outcome"] == "accepted" and s["adopted"] is True
    assert RULE in skill.read_text()
    [p] = proposals(root)
    assert p["status"] == "adopted" and night_record(root)["adopted"] is True
    code, _, err = invoke("rollback")
    assert code == 0, err
    assert skill.read_text() == SEED


def test_auto_adopt_says_in_the_summary_and_every_report_file_that_the_live_skill_was_changed(root: Path) -> None:
    skill = user_skill(root)
    code, out, err = invoke(*run_args(root, "--skill", str(skill), "--auto-adopt", "--format", "text"))
    assert code == 0, err
    [p] = proposals(root)
    changed = "put it live: the live skill was changed"
    for folder in (root / "data" / "nights" / "0001", root / "data" / "staging" / p["id"]):  # the staged copy too
        for text in (out, (folder / "report.md").read_text(), html.unescape((folder / "report.html").read_text())):
            assert changed in text and "not changed" not in text and "staged as a proposal" not in text
        assert json.loads((folder / "report.json").read_text())["adopted"] is True
        assert {f.stat().st_mode & 0o777 for f in folder.glob("report.*")} == {0o600}
        assert not list(folder.glob(".report*"))  # no temporary file left behind
    assert p["status"] == "adopted" and RULE in skill.read_text()


def test_without_auto_adopt_an_accepted_night_only_stages(root: Path) -> None:
    skill = user_skill(root)
    s = run_night(root, "--skill", str(skill))
    assert s["outcome"] == "accepted" and s["adopted"] is False
    assert skill.read_text() == SEED
    [p] = proposals(root)
    assert p["status"] == "staged" and RULE in staged_skill(root, p)


def test_auto_adopt_leaves_the_live_skill_alone_when_the_gate_rejects(root: Path) -> None:
    write_scripts(root, findings=USELESS)
    skill = user_skill(root)
    s = run_night(root, "--skill", str(skill), "--auto-adopt", "--gate", "on")
    assert s["outcome"] == "rejected" and s["adopted"] is False
    assert skill.read_text() == SEED
    assert all(p["status"] == "staged" for p in proposals(root))


def test_a_crlf_skill_keeps_its_line_endings_in_the_proposal(root: Path) -> None:
    skill = user_skill(root)
    skill.write_bytes(SEED.replace("\n", "\r\n").encode())
    s = run_night(root, "--skill", str(skill), "--gate", "off")
    [p] = proposals(root)
    staged = (root / "data" / "staging" / p["id"] / "SKILL.md").read_bytes()
    assert staged.startswith(SEED.replace("\n", "\r\n").encode()) and RULE.encode() + b"\r\n" in staged
    assert b"\n" not in staged.replace(b"\r\n", b"")
    diff = (root / "data" / "staging" / p["id"] / "diff.patch").read_text()
    assert not [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]  # only additions
    assert s["outcome"] == "accepted" and skill.read_bytes() == SEED.replace("\n", "\r\n").encode()


def test_nothing_proposed_for_a_crlf_skill_stages_nothing(root: Path) -> None:
    write_scripts(root, findings=[])
    skill = user_skill(root)
    skill.write_bytes(SEED.replace("\n", "\r\n").encode())
    s = run_night(root, "--skill", str(skill), "--gate", "off")
    assert s["outcome"] == "no-candidate" and s["proposal"] is None and proposals(root) == []


def test_dry_run_writes_the_report_but_stages_and_remembers_nothing(root: Path) -> None:
    s = run_night(root, "--dry-run")
    assert s["dry_run"] is True and s["outcome"] == "accepted" and s["proposal"] is None
    folder = root / "data" / "nights" / "0001"
    assert "night 1" in (folder / "report.md").read_text()
    assert (folder / "report.json").is_file()
    assert not (root / "data" / "staging").exists()
    assert not (root / "data" / "sleep").exists()  # no skill memory
    assert night_record(root)["dry_run"] is True


# --- output --------------------------------------------------------------------------------------


def test_json_prints_one_json_object(root: Path) -> None:
    code, out, err = invoke(*run_args(root, "--steps", "1", "--json"))
    assert code == 0, err
    summary = json.loads(out)  # the whole of stdout, nothing before or after
    assert isinstance(summary, dict) and summary["outcome"] == "accepted" and summary["night"] == 1
    assert "· " not in out  # progress lines go to stderr
    code, out, _ = invoke(*run_args(root, "--steps", "1"))
    assert code == 0 and out.lstrip().startswith("# skillsleep — night 2")
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


# --- --harness, --backend, --optimizer-model, --target-model ---------------------------------------


def test_harness_codex_not_installed_is_a_usage_error(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = root / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out, err = invoke(*run_args(root, "--harness", "codex"))
    assert code == 2, err
    assert "codex" in err and "not usable" in err and "npm install -g @openai/codex" in err
    assert out == ""
    assert not (root / "data" / "nights").exists()  # bad settings never leave a night behind


def test_an_unknown_harness_is_refused_by_the_command_line(root: Path) -> None:
    code, _, err = invoke(*run_args(root, "--harness", "nope"))
    assert code == 2
    assert "Invalid value for '--harness'" in err and "codex" in err
    assert not (root / "data" / "nights").exists()


def test_optimizer_and_target_models_serve_their_roles(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(monkeypatch)
    run_night(root, "--steps", "1")
    models: dict[str, set[str]] = {}
    for role, request in rec.seen:
        models.setdefault(role, set()).add(request.model)
    assert models.pop("target") == {str(root / "target.json")}
    assert {"mine", "reflect", "dream"} <= set(models)
    assert all(m == {str(root / "opt.json")} for m in models.values()), models


def test_target_model_defaults_to_the_optimizer_model(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one script for both: the optimizer's rules plus the target's
    both = optimizer_rules() + json.loads((root / "target.json").read_text())
    write_rules(root, both)
    rec = Recorder(monkeypatch)
    code, _, err = invoke(
        "run",
        "--backend",
        "scripted",
        "--optimizer-model",
        str(root / "opt.json"),
        "--since",
        "3650d",
        "--steps",
        "1",
        "--json",
    )
    assert code == 0, err
    assert {r.model for role, r in rec.seen if role == "target"} == {str(root / "opt.json")}


def test_scripted_backend_without_optimizer_model_names_the_missing_model(root: Path) -> None:
    code, out, err = invoke("run", "--backend", "scripted", "--since", "3650d")
    assert code == 2, err
    assert "no default model" in err and out == ""


# --- layering, end to end ------------------------------------------------------------------------


def test_rollouts_k_from_the_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "2")
    rec = Recorder(monkeypatch)
    run_night(root, "--steps", "1")
    samples = target_samples(rec)
    assert samples and all(v == {0, 1} for v in samples.values())


def test_rollouts_k_from_the_config_file_and_a_flag_beats_env_and_file(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = root / "config.toml"
    config.write_text("[sleep]\nrollouts_k = 2\nsteps = 1\n")
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(config))
    rec = Recorder(monkeypatch)
    run_night(root)
    samples = target_samples(rec)
    assert samples and all(v == {0, 1} for v in samples.values())
    assert len(state(root)["steps"]) == 1  # steps = 1 from the file too

    rec.seen.clear()
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "2")
    run_night(root, "--rollouts-k", "1")
    samples = target_samples(rec)
    assert samples and all(v == {0} for v in samples.values())


@pytest.mark.parametrize("harness", ["chat", "codex"])
def test_a_typo_in_any_harness_table_stops_run_before_any_work(root: Path, harness: str) -> None:
    data = root / "data"
    data.mkdir()
    config = data / "config.toml"
    config.write_text('[harness.codex]\nsandbx = "read-only"\n')
    code, out, err = invoke(*run_args(root, "--harness", harness))
    assert code == 2, err
    assert out == "" and str(config) in err and "[harness.codex]" in err and "unknown key 'sandbx'" in err
    assert sorted(p.name for p in data.iterdir()) == ["config.toml"]  # no harvest, no lock, no night


def test_a_malformed_base_url_stops_run_before_any_work(root: Path) -> None:
    code, out, err = invoke(*run_args(root, "--base-url", "127.0.0.1:8080"))
    assert code == 2, err
    assert out == "" and "--base-url '127.0.0.1:8080'" in err and "http://127.0.0.1:8080/v1" in err
    assert not (root / "data").exists()  # no harvest, no lock, no night, no retries
