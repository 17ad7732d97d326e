"""The command line, wired end to end with scripted backends chosen by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.progress import plain_lines

RULE = "End every reply with a final line `ANSWER: <answer>`."
SEED = "---\nname: fours\ndescription: answer sums\n---\n# Fours\n\n- Read the question.\n"
OPTIMIZER = [
    {
        "match": '"findings"',
        "reply": json.dumps(
            {
                "findings": [
                    {"kind": "skill_defect", "diagnosis": "no answer line", "op": "add", "target": "", "content": RULE}
                ]
            }
        ),
    },
    {"match": '"groups"', "reply": json.dumps({"groups": []})},
    {"match": '"order"', "reply": json.dumps({"order": [1]})},
    {"match": '"guidance"', "reply": json.dumps({"guidance": ["Keep the ANSWER line last."]})},
    {"match": '"notes"', "reply": json.dumps({"notes": ["Answer-format rules pay off."]})},
]
TARGET = [
    {"match": "ANSWER:", "reply": "Two and two.\nANSWER: 4"},
    {"match": "What is", "reply": "It is 4."},
]


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "opt.json").write_text(json.dumps(OPTIMIZER))
    (tmp_path / "target.json").write_text(json.dumps(TARGET))
    (tmp_path / "SKILL.md").write_text(SEED)
    lines = []
    for i in range(10):
        split = "train" if i < 4 else "val" if i < 8 else "test"
        lines.append(
            json.dumps(
                {
                    "id": f"q{i}",
                    "prompt": f"Question {i}: What is 2+2?",
                    "split": split,
                    "answer": "4",
                    "answer_pattern": r"ANSWER:\s*(.+)$",
                    "answer_match": "number",
                    "checks": [{"type": "last_line_regex", "value": "ANSWER: .+"}],
                }
            )
        )
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "run.toml").write_text(
        '[run]\nname = "cli"\n[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        f'[target]\nbackend = "scripted:{tmp_path / "target.json"}"\n'
        f'[optimizer]\nbackend = "scripted:{tmp_path / "opt.json"}"\n'
        '[train]\nepochs = 2\nbatch_size = 4\n[lr]\nschedule = "linear"\nmax_edits = 2\nmin_edits = 1\n'
    )
    return tmp_path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_train_json_summary_reports_an_accepted_gate_and_writes_best_skill(project: Path) -> None:
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["done"] and summary["accepted"] == 1
    assert summary["seed_score"] == 0.0 and summary["best_score"] == 1.0
    assert summary["test"] == {"seed": 0.0, "best": 1.0, "final": 1.0}
    assert summary["gate"][0]["accepted"] and summary["gate"][0]["candidate"] > summary["gate"][0]["baseline"]
    best = Path(summary["best_skill"]).read_text()
    assert RULE in best and best.startswith("---\nname: fours")
    assert "Keep the ANSWER line last." in best  # slow-update guidance, in its protected region
    assert "Answer-format rules" not in best  # the meta skill never reaches the deployed skill
    run = project / "runs" / "cli"
    assert json.loads((run / "summary.json").read_text())["best_score"] == 1.0
    assert (run / "candidates" / "e0s0.md").exists() and (run / "steps" / "e0s0" / "step.json").exists()
    ledger = [json.loads(x) for x in (run / "ledger.jsonl").read_text().splitlines()]
    assert {"target", "reflect", "slow_update", "meta"} <= {e["role"] for e in ledger}
    assert "reflect" in err and "accepted" in err  # progress on stderr


def test_second_train_of_a_finished_run_pays_for_nothing(project: Path) -> None:
    code, first, _ = invoke("train", "--config", str(project / "run.toml"), "--json")
    ledger = project / "runs" / "cli" / "ledger.jsonl"
    before = ledger.read_text()
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(first) and "already finished" in err
    assert ledger.read_text() == before


def test_fresh_retrains_and_the_response_cache_answers_every_call(project: Path) -> None:
    assert invoke("train", "--config", str(project / "run.toml"))[0] == 0
    code, out, _ = invoke("train", "--config", str(project / "run.toml"), "--fresh", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["accepted"] == 1 and summary["calls_made"] == 0


def test_override_changes_a_setting(project: Path) -> None:
    code, out, err = invoke(
        "train", "--config", str(project / "run.toml"), "train.epochs=1", "slow_update.enabled=false", "--json"
    )
    assert code == 0, err
    best = Path(json.loads(out)["best_skill"]).read_text()
    assert json.loads(out)["epochs"] == 1 and "Keep the ANSWER line last." not in best


def test_changed_settings_refuse_to_resume_a_finished_run(project: Path) -> None:
    assert invoke("train", "--config", str(project / "run.toml"))[0] == 0
    code, _, err = invoke("train", "--config", str(project / "run.toml"), "train.batch_size=2")
    assert code == 2 and "--fresh" in err


def test_unknown_config_key_is_a_usage_error_naming_it(project: Path) -> None:
    (project / "bad.toml").write_text('[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n[gate]\nmetrc = "soft"\n')
    code, _, err = invoke("train", "--config", str(project / "bad.toml"))
    assert code == 2 and "metrc" in err and "metric" in err


def test_unknown_provider_is_a_usage_error_listing_known_ones(project: Path) -> None:
    code, _, err = invoke("train", "--config", str(project / "run.toml"), "target.backend=deepsek:deepseek-v4-flash")
    assert code == 2 and "deepseek" in err and "ollama" in err and "Did you mean" in err


def test_budget_hit_mid_run_stops_cleanly_and_resumes_with_a_larger_budget(project: Path) -> None:
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--budget-tokens", "5000", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["stopped"].startswith("budget") and not summary["done"] and summary["tokens"] <= 5000
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--json")
    assert code == 0 and json.loads(out)["done"] and "resuming" in err


def test_budget_too_small_to_score_the_seed_is_an_error(project: Path) -> None:
    code, _, err = invoke("train", "--config", str(project / "run.toml"), "--budget-tokens", "10")
    assert code == 1 and "budget" in err and not (project / "runs/cli/best_skill.md").exists()


def test_eval_scores_a_skill_per_task(project: Path) -> None:
    target = f"scripted:{project / 'target.json'}"
    code, out, err = invoke(
        "eval",
        "--skill",
        str(project / "SKILL.md"),
        "--tasks",
        str(project / "tasks.jsonl"),
        "--target",
        target,
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n"] == 10 and data["score"] == 0.0
    assert "ANSWER" in data["per_task"][0]["feedback"]
    (project / "good.md").write_text(SEED + f"- {RULE}\n")
    code, out, _ = invoke(
        "eval",
        "--skill",
        str(project / "good.md"),
        "--tasks",
        str(project / "tasks.jsonl"),
        "--target",
        target,
        "--split",
        "test",
        "--json",
    )
    assert code == 0 and json.loads(out)["score"] == 1.0 and json.loads(out)["n"] == 2


@pytest.mark.parametrize("verb", ["train", "eval"])
def test_a_check_with_an_empty_value_is_refused_before_any_model_call(project: Path, verb: str) -> None:
    lines = (project / "tasks.jsonl").read_text().splitlines()
    task = json.loads(lines[8])  # a test-split task: before the fix it failed only at the final scoring
    task["checks"] = [{"type": "contains", "value": ""}]
    lines[8] = json.dumps(task)
    (project / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    args = (
        ["train", "--config", str(project / "run.toml")]
        if verb == "train"
        else [
            "eval",
            "--skill",
            str(project / "SKILL.md"),
            "--tasks",
            str(project / "tasks.jsonl"),
            "--target",
            f"scripted:{project / 'target.json'}",
        ]
    )
    code, _, err = invoke(*args)
    assert code == 2 and "tasks.jsonl:9: task 'q8': check 1 (contains): needs a non-empty text value" in err, err
    assert "Traceback" not in err and "scoring" not in err  # refused before the first model call
    assert not (project / "runs").exists()


def test_eval_reads_utf16_skill_and_task_files(project: Path) -> None:
    (project / "good.md").write_bytes((SEED + f"- {RULE}\n").replace("\n", "\r\n").encode("utf-16"))
    (project / "tasks16.jsonl").write_bytes((project / "tasks.jsonl").read_text().encode("utf-16"))
    code, out, err = invoke(
        "eval",
        "--skill",
        str(project / "good.md"),
        "--tasks",
        str(project / "tasks16.jsonl"),
        "--target",
        f"scripted:{project / 'target.json'}",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["score"] == 1.0 and json.loads(out)["n"] == 10


@pytest.mark.parametrize(
    ("flag", "make", "words"),
    [
        (
            "--skill",
            "folder with SKILL.md",
            "skill file {p} is a folder, not a file; give the skill file itself, e.g. {p}/SKILL.md",
        ),
        ("--skill", "latin-1", "skill file {p} is not UTF-8 text: the byte 0xe9 at line 8 (byte offset 80)"),
        ("--tasks", "folder", "task file {p} is a folder, not a file; give a JSONL task file"),
        ("--config", "folder", "config file {p} is a folder, not a file; give a TOML run config"),
    ],
)
def test_eval_and_train_refuse_a_folder_or_non_text_file_cleanly(
    project: Path, flag: str, make: str, words: str
) -> None:
    bad = project / "bad"
    if make.startswith("folder"):
        bad.mkdir()
        (bad / "SKILL.md").write_text(SEED)
    else:
        bad.write_bytes(SEED.encode() + b"- caf\xe9\n")
    args = {
        "--skill": str(project / "SKILL.md"),
        "--tasks": str(project / "tasks.jsonl"),
        "--config": str(project / "run.toml"),
    }
    args[flag] = str(bad)
    code, _, err = invoke(
        "eval", *[x for kv in args.items() for x in kv], "--target", f"scripted:{project / 'target.json'}"
    )
    assert code == 2 and "Traceback" not in err and words.format(p=bad) in err, err
    if flag != "--tasks":
        code, _, err = invoke(
            "train",
            "--config",
            str(bad) if flag == "--config" else str(project / "run.toml"),
            *([] if flag == "--config" else [f"data.skill={bad}"]),
        )
        assert code == 2 and "Traceback" not in err and words.format(p=bad) in err, err


def test_eval_missing_skill_file_is_a_usage_error(project: Path) -> None:
    code, _, err = invoke("eval", "--skill", str(project / "nope.md"), "--tasks", str(project / "tasks.jsonl"))
    assert code == 2 and "skill file not found" in err


def test_backends_json_lists_every_provider_with_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    code, out, err = invoke("backends", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"deepseek", "openai", "ollama", "anthropic", "local", "scripted"} <= set(rows)
    assert rows["deepseek"]["configured"] is False and "DEEPSEEK_API_KEY" in rows["deepseek"]["reason"]
    assert rows["anthropic"]["configured"] is False and "ANTHROPIC_API_KEY" in rows["anthropic"]["reason"]
    assert rows["ollama"]["configured"] is False
    for row in rows.values():
        assert isinstance(row["reason"], str) and row["reason"] and row["how_to_configure"]


def test_backends_sees_a_reachable_ollama_compatible_server(monkeypatch: pytest.MonkeyPatch, fault_server) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OLLAMA_HOST", fault_server.url)
    code, out, _ = invoke("backends", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and rows["ollama"]["configured"] is True


def test_help_lists_the_verbs() -> None:
    code, out, _ = invoke("--help")
    assert code == 0 and all(v in out for v in ("train", "eval", "backends"))
    assert invoke("train")[0] == 2  # missing --config is a usage error


@pytest.mark.parametrize("kind", ["status", "garbage", "truncate"])
def test_a_failing_server_ends_the_run_with_a_clear_error_and_no_best_skill(
    project: Path,
    fault_server,
    kind: str,  # type: ignore[no-untyped-def]
) -> None:
    from servers import Action

    fault_server.default = Action(kind=kind, status=500)
    code, _, err = invoke(
        "train",
        "--config",
        str(project / "run.toml"),
        "target.backend=openai:m",
        f"target.base_url={fault_server.url}/v1",
        "target.retry.attempts=2",
        "target.retry.base_delay_s=0",
    )
    assert code == 1
    assert "failed 2 times" in err and fault_server.url in err
    assert not (project / "runs" / "cli" / "best_skill.md").exists()


def test_a_flaky_server_is_retried_and_the_run_succeeds(project: Path, fault_server) -> None:  # type: ignore[no-untyped-def]
    from servers import Action

    fault_server.push(Action(kind="status", status=429), Action(kind="status", status=503))
    fault_server.default = Action(kind="ok", text="It is 4.")
    code, out, err = invoke(
        "train",
        "--config",
        str(project / "run.toml"),
        "target.backend=openai:m",
        f"target.base_url={fault_server.url}/v1",
        "target.retry.base_delay_s=0",
        "train.epochs=1",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["done"] and len(fault_server.posts()) >= 3


def _edit_test_tasks(project: Path, **change: object) -> None:
    lines = [json.loads(x) for x in (project / "tasks.jsonl").read_text().splitlines()]
    lines = [{**t, **change} if t["split"] == "test" else t for t in lines]
    (project / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))


def _after_training_failure(project: Path, fault_server, how: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Settings under which training succeeds and only the final test scoring fails: a judge
    server that answers 500 (only the test tasks have a rubric), or a target with no answer for
    the test tasks' prompts."""
    from servers import Action

    if how == "judge server down":
        _edit_test_tasks(project, rubric="The answer is 4.")
        fault_server.default = Action(kind="status", status=500)
        return [
            "judge.backend=openai:m",
            f"judge.base_url={fault_server.url}/v1",
            "judge.retry.attempts=2",
            "judge.retry.base_delay_s=0",
        ]
    _edit_test_tasks(project, prompt="Final exam: two plus two?")  # no target rule answers it for the seed
    return []


def _heal(project: Path, fault_server, how: str) -> None:  # type: ignore[no-untyped-def]
    from servers import Action

    if how == "judge server down":
        fault_server.default = Action(kind="ok", text=json.dumps({"score": 1.0, "rationale": "fine"}))
    else:
        (project / "target.json").write_text(json.dumps([*TARGET, {"match": "Final exam", "reply": "It is 4."}]))


@pytest.mark.parametrize("how", ["judge server down", "target has no answer"])
def test_a_failure_after_training_still_writes_the_best_skill_and_the_summary(
    project: Path,
    fault_server,
    how: str,
    caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
) -> None:
    extra = _after_training_failure(project, fault_server, how)
    code, out, err = invoke("train", "--config", str(project / "run.toml"), *extra)
    run = project / "runs" / "cli"
    assert code == 1 and "Traceback" not in err, err
    # the judge calls still in flight are cancelled, not left to fail into tracebacks at shutdown
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
    assert "test split" in err and str(run / "best_skill.md") in err and str(run / "summary.json") in err
    assert RULE in (run / "best_skill.md").read_text()  # the paid-for training is kept
    summary = json.loads((run / "summary.json").read_text())
    assert summary["done"] and summary["accepted"] == 1 and summary["best_score"] == 1.0 and summary["test"] is None
    assert summary["failed"].startswith("scoring the test split:")
    # fixed, the same command scores only the test split (training is not redone) and clears the failure
    _heal(project, fault_server, how)
    code, out, err = invoke("train", "--config", str(project / "run.toml"), *extra, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["failed"] is None and summary["test"] is not None and summary["test"]["best"] == 1.0
    assert json.loads((run / "summary.json").read_text()) == summary
    assert "rollout" not in "\n".join(plain_lines(err.splitlines()))  # no training step ran again


@pytest.mark.parametrize("override", ["run.out_dir=SKILL.md", "run.name=../../../../../../../../proc/nope"])
def test_a_run_folder_that_cannot_be_created_is_a_usage_error(project: Path, override: str) -> None:
    code, _, err = invoke("train", "--config", str(project / "run.toml"), override)
    assert code == 2 and "Traceback" not in err, err
    assert "the run folder " in err and "cannot be created" in err and "set run.out_dir or run.name" in err


def test_thinking_on_a_backend_that_ignores_it_is_refused(project: Path) -> None:
    code, _, err = invoke("train", "--config", str(project / "run.toml"), "target.thinking=true")
    assert code == 2 and "thinking = true has no effect on the scripted backend" in err and "deepseek" in err


def test_eval_with_a_malformed_base_url_is_a_usage_error_naming_the_flag(project: Path, fault_server) -> None:  # type: ignore[no-untyped-def]
    code, out, err = invoke(
        "eval",
        "--skill",
        str(project / "SKILL.md"),
        "--tasks",
        str(project / "tasks.jsonl"),
        "--target",
        "openai:m",
        "--base-url",
        fault_server.url.removeprefix("http://") + "/v1",
    )
    assert code == 2, err
    assert out == "" and "--base-url" in err and "no scheme" in err
    assert fault_server.posts() == []


def test_a_malformed_base_url_in_a_run_config_names_the_file_and_key(project: Path) -> None:
    config = project / "run.toml"
    text = config.read_text().replace("[optimizer]\n", '[optimizer]\nbase_url = "http://127.0.0.1:8080 /v1"\n')
    config.write_text(text)
    code, _, err = invoke("train", "--config", str(config))
    assert code == 2, err
    assert "run.toml" in err and "[optimizer] base_url" in err and "space" in err
    assert not (project / "runs").exists()


def train_on_a_stalled_server(project: Path, fault_server, role: str, *overrides: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    """`train` with `role` on the OpenAI-compatible fault server, which never answers, and `overrides`."""
    from servers import Action

    fault_server.default = Action(kind="hang")
    url = f"{fault_server.url}/v1"
    return invoke(
        "train", "--config", str(project / "run.toml"), f"{role}.backend=openai:m", f"{role}.base_url={url}", *overrides
    )


def test_a_stalled_server_shows_each_retry_and_names_the_run_configs_retry_settings(
    project: Path, fault_server
) -> None:  # type: ignore[no-untyped-def]
    code, _, err = train_on_a_stalled_server(
        project,
        fault_server,
        "target",
        "target.retry.attempts=2",
        "target.retry.timeout_s=1",
        "target.retry.base_delay_s=0",
    )
    assert code == 1
    assert f"· target openai:m attempt 1 of 2 failed: no answer from {fault_server.url}/v1/chat/completions" in err
    assert "failed 2 times" in err and "[target] retry.attempts / retry.timeout_s" in err
    assert "--retries" not in err
    code, _, err = invoke(
        "eval",
        "--skill",
        str(project / "SKILL.md"),
        "--tasks",
        str(project / "tasks.jsonl"),
        "--config",
        str(project / "run.toml"),
        "--target",
        "openai:m",
        "--base-url",
        f"{fault_server.url}/v1",
    )
    assert code == 1
    assert "[target] retry.attempts / retry.timeout_s" in err and "--config" in err


def test_the_optimizers_timeout_s_limits_each_of_its_calls(project: Path, fault_server) -> None:  # type: ignore[no-untyped-def]
    """[optimizer] timeout_s was parsed and ignored (its calls waited the retry's 120 s)."""
    code, _, err = train_on_a_stalled_server(
        project,
        fault_server,
        "optimizer",
        "optimizer.timeout_s=1",
        "optimizer.retry.attempts=1",
    )
    assert code == 1
    # the client's own timeout (0.9 s) or the retry loop's (1 s) fires, whichever the loaded machine lets first
    assert f"openai:m failed 1 times; last error: no answer from {fault_server.url}/v1" in err
    assert "within 1 s" in err
    assert "raise [optimizer] retry.attempts" in err


def test_train_refuses_credentials_the_optimizer_writes_and_keeps_them_out_of_every_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sleep_kit import Recorder

    akia, ghp = "AK" + "IA" + "Z" * 16, "gh" + "p_" + "Zq3" * 12  # fake keys, built so no literal is in this file
    rules = [
        {
            "match": '"findings"',
            "reply": json.dumps(
                {
                    "findings": [
                        {
                            "kind": "skill_defect",
                            "diagnosis": "no answer line",
                            "op": "add",
                            "target": "",
                            "content": RULE,
                        },
                        {
                            "kind": "skill_defect",
                            "diagnosis": "deploys fail",
                            "op": "add",
                            "target": "",
                            "content": f"Deploy with {akia}.",
                        },
                        {
                            "kind": "execution_lapse",
                            "diagnosis": f"pushed with {ghp}",
                            "op": "add",
                            "target": "",
                            "content": f"Push with {ghp}",
                        },
                    ]
                }
            ),
        },
        *[r for r in OPTIMIZER if r["match"] not in ('"findings"', '"guidance"')],
        {"match": '"guidance"', "reply": json.dumps({"guidance": ["Keep the ANSWER line last.", f"Use {akia}."]})},
    ]
    (project / "opt.json").write_text(json.dumps(rules))
    rec = Recorder(monkeypatch)
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--json")
    assert code == 0, err
    run_dir = project / "runs" / "cli"
    best = (run_dir / "best_skill.md").read_text()
    assert RULE in best and akia not in best and ghp not in best
    step = json.loads(next(run_dir.glob("steps/e0s0/step.json")).read_text())
    assert {r["rule"] for r in step["refused"]} == {"credential"} and len(step["refused"]) == 2
    assert {r["matched"] for r in step["refused"]} == {"[REDACTED:aws_access_key]", "[REDACTED:github_token]"}
    epoch = json.loads((run_dir / "epochs" / "e0.json").read_text())
    assert [r["rule"] for r in epoch["slow_update"]["refused"]] == ["credential"]
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.parent.name == "candidates" for p in files)
    assert [str(p) for p in files if akia in p.read_text() or ghp in p.read_text()] == []
    assert akia not in out + err and ghp not in out + err
    assert [t for t in rec.texts("reflect", "merge", "rank", "meta") if akia in t or ghp in t] == []


def test_train_names_every_reply_it_could_not_use_with_its_role_and_step(project: Path) -> None:
    garbage = "Sure! Here is what I would change: <html>{"
    (project / "opt.json").write_text(
        json.dumps([r if r["match"] != '"findings"' else {"match": r["match"], "reply": garbage} for r in OPTIMIZER])
    )
    code, out, err = invoke("train", "--config", str(project / "run.toml"), "--json")
    assert code == 0, err
    summary = json.loads(out)
    step = json.loads((project / "runs" / "cli" / "steps" / "e0s0" / "step.json").read_text())
    assert [
        f
        for f in step["failures"]
        if f["role"] == "reflect"
        and f["where"] == "reflect minibatch 1/1"
        and f["error"].startswith("malformed reply, nothing used: the reply is not valid JSON")
    ]
    expected = "epoch 1 step 1: reflect minibatch 1/1: malformed reply, nothing used: the reply is not valid JSON"
    assert any(p.startswith(expected) for p in summary["problems"]), summary["problems"]
    assert "· epoch 1/2 step 1/1: reflect minibatch 1/1: malformed reply" in "\n".join(plain_lines(err.splitlines()))
    code, text, _ = invoke("train", "--config", str(project / "run.toml"))
    assert code == 0 and expected in text
