"""Lines the user's corrections demand (core/mine/grounding.demanded_lines, core/mine/judge_writing.py): a line a
user shows (after "…:", in a code fence, in backticks) in the corrections of most corrected instances
becomes a `contains` check of the task's judge, whatever the optimizer wrote; the demo's sign-off."""

from __future__ import annotations

import json
from collections.abc import Callable

from skillsleep.core.mine.grounding import demanded_lines, shown_lines, with_demanded
from skillsleep.core.mine.intents import Evidence, Instance, Outcomes
from skillsleep.core.mine.judge_writing import outcome_judge
from skillsleep.core.mine.mining import mine
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Check, CompletionRequest, Judge, Run
from skillsleep.core.shared.session import Session, Turn
from skillsleep.core.train.checks import run_checks

SIGN_OFF = "Signed-off-by: Sam Rivera <sam@example.com>"
SAID = [
    f"You forgot it again:\n{SIGN_OFF}",
    f"You missed the sign-off line:\n{SIGN_OFF}",
    f"You forgot the sign-off line again:\n{SIGN_OFF}",
]


def instance(prompt: str, *said: str) -> Instance:
    evidence = [Evidence(kind="correction", text=t) for t in said]
    return Instance(harness="chat", session_id=prompt[:8], prompt=prompt, key=prompt, evidence=evidence)


def test_a_line_is_shown_after_a_colon_in_a_fence_or_in_backticks() -> None:
    assert shown_lines(SAID[0]) == [SIGN_OFF]
    fenced = "no, the header must be:\n```\nVerdict: PASS\nScore: 3\n```\nand use `--frozen` too"
    assert shown_lines(fenced) == ["Verdict: PASS", "Score: 3", "--frozen"]
    assert shown_lines("no, shorter please. You forgot the tests again") == []
    assert shown_lines("paste this:\n" + "x" * 201) == []  # longer than a line a reply would repeat


def test_a_line_shown_in_most_corrected_instances_is_demanded_and_a_one_off_is_not() -> None:
    instances = [
        instance("Short commit message for the ruff formatting pass", SAID[0]),
        instance("One-line commit message for the updated test snapshots", SAID[1]),
        instance("Commit message for the Crowdin translation sync", SAID[2], "also use:\n`chore:` as prefix"),
        instance("Commit message for the dependency bump"),  # accepted: no correction
    ]
    assert demanded_lines(instances) == [SIGN_OFF]  # "chore:" was shown once; the lead-in lines are not shown
    assert demanded_lines(instances[:1]) == []  # one instance is no recurring demand
    half = [instance("a", SAID[0]), instance("b", SAID[1]), instance("c", "no:\nshorter"), instance("d", "no:\nlonger")]
    assert demanded_lines(half) == []  # 2 of 4 corrected instances is not most of them


def test_a_demanded_line_is_added_first_and_a_negative_check_it_fails_is_dropped() -> None:
    written = [
        Check(type="not_contains", value="Signed-off-by"),
        Check(type="not_regex", value="(?i)sam@"),
        Check(type="max_lines", value=3),
        Check(type="not_contains", value="WIP"),
    ]
    dropped: list[str] = []
    checks = with_demanded(written, [SIGN_OFF], dropped)
    assert [(c.type, c.value) for c in checks] == [("contains", SIGN_OFF), ("max_lines", 3), ("not_contains", "WIP")]
    assert len(dropped) == 2 and all("the user demands a line it forbids" in d for d in dropped)
    again = with_demanded(checks, [SIGN_OFF], [])
    assert again == checks  # already required: not added twice
    reply = Run(response=f"chore: regenerate the API client\n\n{SIGN_OFF}")
    assert all(r.passed for r in run_checks(Judge(checks=checks), reply))
    assert not run_checks(Judge(checks=checks), Run(response="chore: regenerate the API client"))[0].passed


def test_the_fallback_judge_is_the_demanded_check_and_says_it_is_grounded() -> None:
    instances = [instance("commit message for the ruff pass", SAID[0]), instance("commit message for docs", SAID[1])]
    judge = outcome_judge(Outcomes(failure=2), instances)
    assert judge.grounding == "evidence" and judge.rubric is None
    assert judge.checks == [Check(type="contains", value=SIGN_OFF)]
    plain = outcome_judge(Outcomes(failure=1), [instance("tidy", "no, shorter please")])
    assert plain.grounding == "outcome-signals" and plain.checks == []


def judge_writer(reply: Callable[[], str]) -> LLM:
    def respond(request: CompletionRequest) -> str:
        if (request.json_schema or {}).get("title") == "mine_judge":
            return reply()
        return json.dumps({"groups": []})

    return LLM(ScriptedBackend(BackendSettings(model="optimizer"), respond), ledger=Ledger())


def sessions(n: int) -> list[Session]:
    requests = ["Short commit message for the ruff formatting pass", "Commit message for the API client, brief"]
    out = []
    for k in range(n):
        turns = [("user", requests[k % 2]), ("assistant", "chore: tidy"), ("user", SAID[k % 3])]
        out.append(Session(harness="chat", id=f"s{k}", turns=[Turn(kind=a, text=b) for a, b in turns]))  # type: ignore[arg-type]
    return out


async def test_a_mined_judge_requires_the_sign_off_whatever_the_optimizer_wrote() -> None:
    """The demo's case: the 0.5B wrote only a junk negative check, or a reply that cannot be read."""
    junk = json.dumps({"checks": [{"type": "not_contains", "value": "Signed-off-by"}], "rubric": ""})
    for reply in (junk, "no json here"):
        result = await mine(sessions(6), llm=judge_writer(lambda r=reply: r), min_recurrence=2)  # type: ignore[misc]
        assert len(result.tasks) == 2, reply  # the two requests, 3 corrected instances each
        for mined in result.tasks:
            judge = mined.task.judge
            assert judge.grounding == "evidence", reply
            assert judge.checks[0] == Check(type="contains", value=SIGN_OFF), reply
            assert not any(c.type == "not_contains" for c in judge.checks), reply
