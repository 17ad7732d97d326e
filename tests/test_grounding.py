"""Judges grounded in evidence (core/mine/grounding.py, core/mine/judge_writing.py): a literal of a check is
in the user's words, a check is satisfiable by every instance (an id of one instance generalised or
dropped), a rubric sentence keeps only grounded content words, nothing of the judge prompt's own
examples survives, and where nothing is grounded the judge is the outcome-signals rubric — on
hand-made sessions, on the recorded agent fixtures and on the shared real transcripts."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest
from sleep_kit import invoke, night_env

from skillsleep.core.mine.dream import dream
from skillsleep.core.mine.grounding import (
    POSITIVE,
    Grounds,
    check_literals,
    ground_check,
    ground_judge,
    regex_literals,
    tokens,
)
from skillsleep.core.mine.intents import Evidence, Instance, Outcomes
from skillsleep.core.mine.judge_writing import DEFAULT_RUBRIC, judge_messages, outcome_judge
from skillsleep.core.mine.mining import MinedTask, mine
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import PLACEHOLDER, render
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.result import NightResult, ReportTask
from skillsleep.core.shared.records import Check, CompletionRequest, Judge, Run
from skillsleep.core.shared.session import Session, Turn
from skillsleep.core.train.checks import run_checks
from skillsleep.core.train.reflect import Finding, as_edit
from skillsleep.harnesses.claude_code.transcripts import parse_claude
from skillsleep.harnesses.codex.transcripts import parse_codex
from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite
from skillsleep.harnesses.skills import managed_seed

FIXTURES = Path(__file__).parent / "fixtures"
OLD_EXAMPLE = "The answer must run the tests with pytest, not unittest: the user corrected this before."


def instance(prompt: str, *said: str, outcome: str = "unknown") -> Instance:
    evidence = [Evidence(kind="correction", text=t) for t in said]
    return Instance(
        harness="chat", session_id=prompt[:8], prompt=prompt, key=prompt, outcome=outcome, evidence=evidence
    )  # type: ignore[arg-type]


def grounds(*prompts: str) -> Grounds:
    return Grounds(instance(p) for p in prompts)


# --- the rules -------------------------------------------------------------------------------------


def test_regex_literals_are_the_literal_runs_without_classes_groups_or_quantified_characters() -> None:
    assert regex_literals(r"^ANSWER: \d+$") == ["ANSWER:"]
    assert regex_literals(r"(?:pytest|unit\.test)s?") == ["pytest", "unit.test"]
    assert regex_literals(r"[A-Z]+-\d{2,}") == ["-"]
    assert regex_literals(r"(?P<id>PROJ)-(?i:done)") == ["PROJ", "-", "done"]


def test_a_literal_is_grounded_by_whole_adjacent_words_of_one_text() -> None:
    g = grounds("Run the latest tests in src/app.ts", "Put the answer last")
    assert g.has("ANSWER:") and g.has("src/app.ts") and g.has("latest tests")
    assert not g.has("test")  # inside "latest", not a word of its own
    assert not g.has("answer last tests")  # spans two texts
    assert not g.has("pytest")


def test_an_id_of_one_instance_is_generalised_to_its_shape_when_every_instance_names_one() -> None:
    g = grounds("Implement PROJ-123 from the tracker", "Implement PROJ-4567 from the tracker")
    check, why = ground_check(Check(type="contains", value="PROJ-123"), g)
    assert check is not None and check.type == "regex", why
    assert check.feedback and "PROJ-<number>" in check.feedback
    for request, other in (("PROJ-123", "PROJ-4567"), ("PROJ-4567", "PROJ-123")):
        [passed] = run_checks(Judge(checks=[check]), Run(response=f"Done: {request}."))
        assert passed.passed, other
    [failed] = run_checks(Judge(checks=[check]), Run(response="Done."))
    assert not failed.passed and "PROJ-<number>" in failed.feedback
    written = Check(type="contains", value="PROJ-123", feedback="The answer must name PROJ-123.")
    [kept] = ground_judge([written], None, g).checks
    assert kept == check  # with the feedback written for the shape, not the one naming PROJ-123


def test_a_language_check_is_grounded_by_the_language_the_user_names() -> None:
    check = Check(type="language", value="es")
    assert (
        ground_check(check, grounds("Reply in Spanish: how many eggs?", "In Spanish, please: the total?"))[0] == check
    )
    check_, why = ground_check(check, grounds("How many eggs?", "What is the total?"))
    assert check_ is None and "'Spanish' is not in the user's words" in why


def test_an_id_or_file_of_one_instance_that_no_shape_fits_is_dropped() -> None:
    g = grounds("Implement PROJ-123 in src/app.ts", "Implement the login page")
    for value in ("PROJ-123", "src/app.ts"):
        check, why = ground_check(Check(type="contains", value=value), g)
        assert check is None and "names one instance" in why
    assert ground_check(Check(type="regex", value=r"PROJ-123\b"), g)[0] is None
    assert ground_check(Check(type="max_words", value=123), g)[0] is None
    # a check every instance can pass stays: a word of every request
    assert ground_check(Check(type="contains", value="Implement"), g)[0] is not None
    # forbidding what one request names is no requirement of the task either
    check, why = ground_check(Check(type="not_contains", value="src/app.ts"), g)
    assert check is None and "wording of some requests" in why


def test_a_literal_nobody_wrote_drops_the_check() -> None:
    g = grounds("add retries to the http client")
    for check in (
        Check(type="contains", value="pytest"),
        Check(type="regex", value=r"^(pytest|retries)"),
        Check(type="json_valid"),
        Check(type="max_chars", value=400),
        Check(type="tool_called", value="Bash"),
    ):
        kept, why = ground_check(check, g)
        assert kept is None and "is not in the user's words" in why, check


def test_a_rubric_sentence_is_kept_only_when_every_content_word_is_grounded() -> None:
    g = Grounds([instance("fix the failing parser tests", "no, keep the old error messages")])
    assert g.ungrounded_words("The answer must fix the failing tests and keep the error messages.") == []
    assert g.ungrounded_words("Fixing the parser; tests keep failing.") == []  # by stem
    assert g.ungrounded_words(OLD_EXAMPLE) == ["run", "pytest", "unittest"]
    assert g.ungrounded_words("The answer must <what the user required>.") == ["<what the user required>"]


# --- the prompt's examples -------------------------------------------------------------------------


def prompt_examples(system: str) -> list[str]:
    """Every quoted or back-ticked text of several words in the judge-writing instructions."""
    found = re.findall(r'"([^"\n]+)"|`([^`\n]+)`|\(([^()\n]+)\)', system)
    return sorted({t.strip() for group in found for t in group if t and " " in t.strip()})


def copying_llm(system_examples: list[str]) -> tuple[LLM, ScriptedBackend]:
    """A judge writer that copies the prompt's examples verbatim into every place of its reply."""

    def respond(request: CompletionRequest) -> str:
        title = (request.json_schema or {}).get("title")
        if title == "mine_merge":
            return json.dumps({"groups": []})
        checks = [
            {"type": kind, "value": example, "feedback": example}
            for example in system_examples
            for kind in ("contains", "section_present", "tool_called", "not_contains")
        ]
        return json.dumps({"checks": checks, "rubric": " ".join(e.rstrip(".") + "." for e in system_examples)})

    backend = ScriptedBackend(BackendSettings(model="optimizer"), respond)
    return LLM(backend, ledger=Ledger()), backend


def judge_texts(mined: MinedTask) -> list[str]:
    judge = mined.task.judge
    return [str(c.value) for c in judge.checks] + [c.feedback or "" for c in judge.checks] + [judge.rubric or ""]


def session(*turns: tuple[str, str], sid: str) -> Session:
    return Session(harness="chat", id=sid, turns=[Turn(kind=kind, text=text) for kind, text in turns])  # type: ignore[arg-type]


async def test_the_judge_prompts_examples_never_survive_a_model_that_copies_them() -> None:
    system = judge_messages(["x"], [], Outcomes())[0].content
    examples = prompt_examples(system)
    assert OLD_EXAMPLE not in system and "pytest" not in system
    assert "The answer must <what the user required>." in examples and len(examples) >= 5
    llm, _ = copying_llm(examples)
    sessions = [
        session(("user", "Implement PROJ-12 from the tracker"), ("assistant", "Done."), sid=f"s{n}") for n in range(3)
    ]
    result = await mine(sessions, llm=llm)
    [mined] = result.tasks
    for text in judge_texts(mined):
        assert not any(example in text for example in examples), text
    assert mined.task.judge.grounding == "outcome-signals" and mined.judge_source == "default"
    assert mined.task.judge.rubric == DEFAULT_RUBRIC
    assert len(mined.dropped_checks) >= len(examples) * 4


async def test_an_example_the_sessions_do_contain_survives() -> None:
    system = judge_messages(["x"], [], Outcomes())[0].content
    example = "The answer must <what the user required>."
    assert example in system
    llm, _ = copying_llm([example, "reply in plain text"])
    said = "no, the answer must <what the user required>. reply in plain text"
    sessions = [
        session(("user", "Summarise the diff"), ("assistant", "Done."), ("user", said), sid=f"s{n}") for n in range(2)
    ]
    [mined] = (await mine(sessions, llm=llm)).tasks
    assert mined.task.judge.grounding == "evidence"
    kept = mined.task.judge.checks
    assert {c.value for c in kept if c.type == "section_present"} == {example, "reply in plain text"}
    # the writer also wrote `contains X` and `not_contains X` for each: no reply passes both, so both go
    assert not any(c.type in ("contains", "not_contains") for c in kept)
    assert sum("contradictory checks" in d for d in mined.dropped_checks) == 2


# --- the fallback ----------------------------------------------------------------------------------


def test_the_outcome_signals_rubric_names_the_signals_by_count_and_never_quotes_the_sessions() -> None:
    secret_words = "please use pnpm for this, never npm"
    instances = [
        instance("build the site", secret_words, outcome="failure"),
        Instance(
            harness="chat",
            session_id="b",
            prompt="build the site",
            key="build the site",
            outcome="failure",
            evidence=[Evidence(kind="error", text="npm ERR! missing script")],
        ),
        instance("build the site", outcome="success"),
    ]
    judge = outcome_judge(Outcomes(failure=2, success=1), instances)
    assert judge.grounding == "outcome-signals" and judge.checks == []
    rubric = judge.rubric or ""
    assert rubric.startswith(DEFAULT_RUBRIC)
    assert "corrected the answer in 1 of 3" in rubric and "1 of 3 earlier attempts ended in an error" in rubric
    assert "1 of 3 earlier attempts ended as the user wanted" in rubric
    assert "pnpm" not in rubric and "npm" not in rubric.replace("pnpm", "")


async def test_a_reply_that_cannot_be_read_gives_the_outcome_signals_judge() -> None:
    backend = ScriptedBackend(
        BackendSettings(model="optimizer"),
        lambda r: "no json here" if (r.json_schema or {}).get("title") == "mine_judge" else '{"groups": []}',
    )
    sessions = [session(("user", "tidy the imports"), ("assistant", "Done."), sid=f"s{n}") for n in range(2)]
    result = await mine(sessions, llm=LLM(backend, ledger=Ledger()))
    [mined] = result.tasks
    assert mined.task.judge.grounding == "outcome-signals"
    assert any("outcome-signals rubric" in p.line() for p in result.problems)


def test_report_md_says_which_judges_are_built_from_outcome_signals_only() -> None:
    tasks = [
        ReportTask(id="mine-aaa", intent="a", split="val", grounding="evidence"),
        ReportTask(id="mine-bbb", intent="b", split="test", grounding="outcome-signals"),
        ReportTask(id="mine-aaa~dream1", intent="c", split="train", origin="dream", grounding="evidence"),
    ]
    result = NightResult.model_validate(
        {
            "night": 1,
            "skill_name": "s",
            "skill_path": "/x/SKILL.md",
            "harness": "chat",
            "outcome": "no-candidate",
            "reason": "r",
            "started": "2026-12-01T00:00:00Z",
            "finished": "2026-12-01T00:01:00Z",
            "tasks": [t.model_dump() for t in tasks],
        }
    )
    md = render_markdown(result)
    assert (
        "Judges: 1 of 2 grounded in the sessions (every check and rubric sentence traced to the user's words); "
        "1 built from outcome signals only (nothing the user wrote could be checked): mine-bbb." in md
    )


# --- recorded fixtures and real transcripts ---------------------------------------------------------


def adversarial_llm() -> LLM:
    """A judge writer that mixes what a small model invents (the old example, a made-up tool and
    length) with a word and an id-like text of the request it is shown."""

    def respond(request: CompletionRequest) -> str:
        if (request.json_schema or {}).get("title") == "mine_merge":
            return json.dumps({"groups": []})
        shown = re.search(r"<<<REQUEST\n(.*?)\nREQUEST>>>", request.messages[-1].content, re.S)
        words = (shown.group(1) if shown else "").split()
        idlike = next((w for w in words if any(ch.isdigit() for ch in w)), "PROJ-1")
        plain = next((w for w in words if w.isalpha() and len(w) >= 4), "pytest")
        checks = [
            {"type": "contains", "value": idlike, "feedback": f"The answer must name {idlike}."},
            {"type": "contains", "value": plain, "feedback": f"The answer must say {plain}."},
            {"type": "regex", "value": r"\bpytest\b", "feedback": OLD_EXAMPLE},
            {"type": "tool_called", "value": "Bash", "feedback": "The agent must run a command."},
            {"type": "max_words", "value": 250, "feedback": "Keep it under 250 words."},
        ]
        rubric = f"{OLD_EXAMPLE} The answer must {plain}."
        return json.dumps({"checks": checks, "rubric": rubric})

    return LLM(ScriptedBackend(BackendSettings(model="optimizer"), respond), ledger=Ledger())


def assert_grounded(tasks: Iterable[MinedTask]) -> int:
    """Every judge of `tasks` is grounded in its instances; returns how many judges used evidence."""
    with_evidence = 0
    for mined in tasks:
        judge, g = mined.task.judge, Grounds(mined.instances)
        users_words = [f" {' '.join(tokens(t))} " for t in g.texts]
        for check in judge.checks:
            for literal in check_literals(check):
                assert any(f" {' '.join(tokens(literal))} " in t for t in users_words), (mined.task.id, check)
                if check.type in POSITIVE and any(ch.isdigit() for ch in literal):
                    assert g.in_every_instance(literal), (mined.task.id, check)
            assert not check.feedback or g.ungrounded_words(check.feedback) == [], check.feedback
        if judge.grounding == "evidence":
            with_evidence += 1
            assert judge.rubric is None or g.ungrounded_words(judge.rubric) == [], judge.rubric
        else:
            assert judge.grounding == "outcome-signals" and judge == outcome_judge(mined.outcomes, mined.instances)
        assert "pytest" not in json.dumps(judge.model_dump()) or any("pytest" in t for t in g.texts)
    return with_evidence


def read_sessions(paths: Iterable[Path]) -> list[Session]:
    sessions: list[Session] = []
    for path in paths:
        if path.suffix == ".sqlite":
            sessions += read_openclaw_sqlite(path)[0].sessions
        elif "codex" in path.parts or path.name.startswith("rollout-"):
            sessions += parse_codex(path.read_bytes(), source=str(path)).sessions
        else:
            sessions += parse_claude(path.read_bytes(), source=str(path)).sessions
    return sessions


async def test_judges_of_tasks_mined_from_the_recorded_fixtures_are_grounded() -> None:
    paths = sorted((FIXTURES / "recorded").rglob("*.jsonl")) + sorted((FIXTURES / "recorded").rglob("*.sqlite"))
    paths += sorted((FIXTURES / "claude").glob("*.jsonl")) + sorted((FIXTURES / "codex").glob("*.jsonl"))
    sessions = read_sessions(p for p in paths if "stdout" not in p.parts)
    result = await mine(sessions, llm=adversarial_llm(), min_recurrence=1, max_tasks=None)
    assert len(result.tasks) >= 5
    assert assert_grounded(result.tasks) >= 3  # the request's own word survives
    assert result.dropped_checks >= 4 * len(result.tasks)


async def test_judges_of_tasks_mined_from_the_shared_real_transcripts_are_grounded(transcripts: Path) -> None:
    sessions = read_sessions(p for p in sorted(transcripts.rglob("*.jsonl")) if "openclaw" not in p.parts)
    if not sessions:
        pytest.skip(f"no Claude Code or Codex sessions under {transcripts}")
    result = await mine(sessions, llm=adversarial_llm(), min_recurrence=1, max_tasks=None)
    assert result.tasks, "no task mined from the shared transcripts"
    assert assert_grounded(result.tasks) >= 1


# --- a night on the embedded model ------------------------------------------------------------------

RECORDED_HOMES = {
    "CLAUDE_CONFIG_DIR": FIXTURES / "recorded" / "claude" / "config",
    "CODEX_HOME": FIXTURES / "recorded" / "codex" / "codex-home",
    "OPENCLAW_STATE_DIR": FIXTURES / "recorded" / "openclaw" / "state",
}


@pytest.mark.slow
def test_a_night_on_the_local_model_writes_no_ungrounded_judge_text(
    tmp_path: Path, local_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded 0.5B (which copies the prompt's examples when it can) mines the recorded Claude
    Code, Codex and OpenClaw sessions and writes the judge of their most recurring task ("say
    hello", asked in all three agents, or a merge of the model's as often asked): every text of it
    is grounded. One task is too few to
    split, so the night ends after planning (a merge and a judge call: minutes on 2 shared cores)."""
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.delenv("SKILLSLEEP_CHAT_DIRS", raising=False)
    for n, (variable, home) in enumerate(RECORDED_HOMES.items()):
        shutil.copytree(home, tmp_path / f"home{n}")
        monkeypatch.setenv(variable, str(tmp_path / f"home{n}"))
    monkeypatch.chdir(tmp_path)
    models = data / "cache" / "models"  # the model the fixture assembled, not 491 MB again
    models.mkdir(parents=True)
    (models / local_model_path.name).symlink_to(local_model_path)
    live = data / "skills" / "skillsleep-learned" / "SKILL.md"
    live.parent.mkdir(parents=True)
    live.write_text(managed_seed())
    code, out, err = invoke("run", "--backend", "local", "--since", "3650d", "--max-tasks", "1", "--json")
    assert code == 0, err[-3000:]
    summary = json.loads(out)
    folder = Path(summary["report"]["report.json"]).parent
    plan = NightPlan.model_validate_json((folder / "plan.json").read_text())
    assert len(plan.mined.tasks) == 1 and plan.not_ready, plan.problems  # e.g. "say hello" (4 times, 3 agents)
    assert summary["calls_by_role"]["mine"]["calls"] == 2  # the paraphrase merge, the judge
    assert_grounded(plan.mined.tasks)
    system = judge_messages(["x"], [], Outcomes())[0].content
    examples = prompt_examples(system)
    for mined in plan.mined.tasks:
        for text in judge_texts(mined):
            assert not any(e in text for e in examples), (mined.task.id, text)


# --- the other prompts' examples --------------------------------------------------------------------


def test_a_finding_that_copies_the_reflect_or_repair_examples_is_dropped() -> None:
    for name in ("reflect_literal", "repair_system"):
        system = render(name)
        assert "Label: value" not in system and "`<a label>: <its value>`" in system
        assert "`<the exact text the feedback asks for>`" in system
    for content in (
        "Begin every reply with the line `<the exact text the feedback asks for>`.",
        "End every reply with a line `<a label>: <its value>`.",
    ):
        for kind in ("skill_defect", "execution_lapse"):
            finding = Finding(diagnosis="d", kind=kind, op="add", target="", content=content)  # type: ignore[arg-type]
            edit, why = as_edit(finding)
            assert edit is None and "copies the instructions' format" in why, content
    filled = Finding(diagnosis="d", kind="skill_defect", op="add", target="", content="End with `ANSWER: <n>`.")
    assert as_edit(filled)[0] is not None  # a placeholder of the judge's own feedback is content


async def test_a_dream_that_copies_the_reply_format_is_no_variant() -> None:
    system = render("dream_system")
    assert '"<request>"' not in system
    [placeholder] = PLACEHOLDER.findall(system)
    replies = iter([json.dumps({"variants": [placeholder, "Tidy the imports of the parser module"]})])
    llm = LLM(ScriptedBackend(BackendSettings(model="optimizer"), lambda _: next(replies)), ledger=Ledger())
    [mined] = (await mine([session(("user", "tidy the imports"), ("assistant", "Done."), sid="d")])).tasks
    dreams = await dream(llm, mined, 2, [], Redactor())
    assert [t.prompt for t in dreams.tasks] == ["Tidy the imports of the parser module"]
    assert any("copied the reply format" in p.line() for p in dreams.problems)


# --- one request's wording; contradictions (the demo's 0.5B judges) --------------------------------


def test_a_literal_from_some_requests_wording_is_dropped_and_one_from_the_corrections_stays() -> None:
    """The 0.5B merged "commit message for the ruff formatting pass" with other commit-message
    requests and wrote `contains "ruff"`: a reply to another request can never hold it."""
    sign_off = "You missed the sign-off line:\nSigned-off-by: Sam Rivera <sam@example.com>"
    g = Grounds(
        [
            instance("Short commit message for the ruff formatting pass", sign_off),
            instance("One-line commit message for the updated test snapshots", sign_off),
            instance("Commit message for the Crowdin translation sync", sign_off.replace("missed", "forgot")),
        ]
    )
    dropped, why = ground_check(Check(type="contains", value="ruff"), g)
    assert dropped is None and "wording of some requests" in why
    request = Check(type="contains", value="commit message for the Crowdin translation sync")
    assert ground_check(request, g)[0] is None
    for kept in ("Signed-off-by: Sam Rivera <sam@example.com>", "commit message"):  # a correction; every request
        check = Check(type="contains", value=kept)
        assert ground_check(check, g) == (check, "")
    for forbidden in ("ruff", "ruff formatting pass"):  # forbids one request's own subject
        for kind in ("not_contains", "not_regex"):
            dropped, why = ground_check(Check(type=kind, value=forbidden), g)
            assert dropped is None and "wording of some requests" in why
    absent = Check(type="not_contains", value="commit message")  # every request's words: any reply can meet it
    assert ground_check(absent, g) == (absent, "")


def test_checks_no_reply_can_pass_together_are_both_dropped() -> None:
    g = grounds("write the commit message for the ruff pass", "write the commit message for the docs")
    checks = [
        Check(type="contains", value="commit message"),
        Check(type="not_contains", value="commit message"),
        Check(type="regex", value="^commit"),
        Check(type="not_regex", value="^commit"),
        Check(type="not_contains", value="write"),
    ]
    out = ground_judge(checks, None, g)
    assert [(c.type, c.value) for c in out.checks] == [("not_contains", "write")]
    assert sorted(d for d in out.dropped if "contradictory" in d) == [
        "contradictory checks on '^commit': both dropped",
        "contradictory checks on 'commit message': both dropped",
    ]
    assert len(out.checks) == 1  # what is left can be passed
