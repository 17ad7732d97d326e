"""Review and adopt per skill: `diff`, `adopt`, `reject`, `rollback`, `status` take a skill's name where
they took a proposal id; `adopt --all` adopts each skill's newest accepted proposal, each checked as a
single adopt. Two (or three) skills with pending proposals, staged on real files; every file not
adopted is compared byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sleep_kit import data, invoke  # noqa: F401  (fixtures)

from skillsleep.core.night.nights import Nights
from skillsleep.core.report.proposals import Proposals

REVIEW = "---\nname: review-pr\ndescription: review a pull request\n---\n- one\n- two\n- three\n- four\n"
# review-pr's changes: 1: two → TWO; 2: a line after four
REVIEW_NEW = "---\nname: review-pr\ndescription: review a pull request\n---\n- one\n- TWO\n- three\n- four\n- five\n"
FMT = "---\r\nname: fmt\r\n---\r\n- Be brief.\r\n"  # CRLF: its bytes must stay as they are
FMT_NEW = "---\r\nname: fmt\r\n---\r\n- Be brief.\r\n- End with `ANSWER: <answer>`.\r\n"


class Two:
    """Two user skills (`review-pr`, `fmt`), each with one accepted pending proposal."""

    def __init__(self, root: Path, data: Path) -> None:
        self.data = data
        self.review = root / "skills" / "review-pr" / "SKILL.md"
        self.fmt = root / "skills" / "formatting" / "SKILL.md"  # its folder's name is not its name
        for path, text in ((self.review, REVIEW), (self.fmt, FMT)):
            path.parent.mkdir(parents=True)
            path.write_bytes(text.encode())
        self.review_id = self.stage(self.review, REVIEW_NEW)
        self.fmt_id = self.stage(self.fmt, FMT_NEW)

    def stage(self, path: Path, text: str, *, accepted: bool = True, **fields: object) -> str:
        return Proposals(self.data).stage(path, text, accepted=accepted, reason="0.40 → 0.70", **fields).id

    def status(self, pid: str) -> str:
        return next(p.status for p in Proposals(self.data).list() if p.id == pid)


@pytest.fixture
def two(tmp_path: Path, data: Path) -> Two:
    return Two(tmp_path, data)


def test_adopt_by_name_puts_only_that_skill_live(two: Two) -> None:
    code, out, err = invoke("adopt", "fmt", "--json")
    assert code == 0, err
    assert json.loads(out)["proposal"]["id"] == two.fmt_id
    assert two.fmt.read_bytes() == FMT_NEW.encode()
    assert two.review.read_bytes() == REVIEW.encode()  # the other skill: byte for byte as it was
    assert two.status(two.review_id) == "staged" and two.status(two.fmt_id) == "adopted"
    code, out, err = invoke("adopt", "formatting")  # the folder's name is the same skill: adopted already
    assert code == 2 and "skill 'formatting' has no pending proposal" in err and f"{two.fmt_id}, was adopted" in err
    assert "review-pr (" in err  # the skills that still have one


def test_an_id_still_names_its_proposal(two: Two) -> None:
    code, _, err = invoke("adopt", two.review_id)
    assert code == 0, err
    assert two.review.read_bytes() == REVIEW_NEW.encode() and two.fmt.read_bytes() == FMT.encode()


def test_edits_are_numbered_per_skill(two: Two) -> None:
    code, out, err = invoke("diff", "review-pr", "--format", "md")
    assert code == 0, err
    hunks = [line.split("@@ ")[-1] for line in out.splitlines() if line.startswith("@@")]
    assert f"`{two.review_id}`" in out and hunks == ["change 1", "change 2"]
    assert f"`skillsleep adopt {two.review_id} --edits 1`" in out  # the example names this skill's proposal
    code, out, err = invoke("diff", "fmt", "--json")
    assert code == 0 and [c["number"] for c in json.loads(out)["changes"]] == [1]
    code, _, err = invoke("adopt", "review-pr", "--edits", "2")
    assert code == 0, err
    assert two.review.read_bytes() == REVIEW.replace("- four\n", "- four\n- five\n").encode()
    assert two.fmt.read_bytes() == FMT.encode()
    code, _, err = invoke("adopt", "fmt", "--edits", "2")  # fmt has one change: 2 is not one of its numbers
    assert code == 2 and "1" in err and two.fmt.read_bytes() == FMT.encode()
    assert two.status(two.fmt_id) == "staged"


def test_adopt_all_adopts_each_skill_and_refuses_the_one_edited_since_staging(two: Two) -> None:
    older = two.stage(two.review, REVIEW_NEW.replace("- five", "- 5"))  # review-pr: an older accepted one …
    newest = two.stage(two.review, REVIEW_NEW.replace("- five", "- six"))  # … and a newer one
    two.stage(two.fmt, FMT + "- noise\r\n", accepted=False)  # not accepted: --all never takes it
    edited = FMT + "- my own line\r\n"
    two.fmt.write_bytes(edited.encode())  # the user edits fmt after the night staged
    code, out, err = invoke("adopt", "--all", "--json")
    assert code == 2, err  # one refused: not a success
    r = json.loads(out)
    assert (r["adopted"], r["refused"]) == (1, 1)
    by_skill = {s["skill"]: s for s in r["skills"]}
    assert set(by_skill) == {"review-pr", "fmt"}
    assert by_skill["review-pr"]["proposal"] == newest and by_skill["review-pr"]["adopted"]["proposal"]["id"] == newest
    adopted = by_skill["review-pr"]["adopted"]
    assert (
        sorted(adopted["superseded"]) == sorted([two.review_id, older]) and by_skill["review-pr"]["left_pending"] == []
    )
    assert by_skill["fmt"]["adopted"] is None and "changed since proposal" in by_skill["fmt"]["refused"]
    assert two.review.read_bytes() == REVIEW_NEW.replace("- five", "- six").encode()
    assert two.fmt.read_bytes() == edited.encode()  # refused: the user's edit stays, byte for byte
    assert [two.status(p) for p in (two.review_id, older, newest, two.fmt_id)] == [
        "superseded",  # review-pr's older ones were staged against the file before the adopt
        "superseded",
        "adopted",
        "staged",  # fmt's: another skill, never superseded by review-pr's adopt
    ]
    code, out, err = invoke("adopt", "--all", "--format", "text")  # again: review-pr has nothing pending now
    assert code == 2 and "0 adopted, 1 refused" in out
    assert "review-pr" not in out and "- fmt: refused proposal" in out and "my own line" in out
    assert two.review.read_bytes() == REVIEW_NEW.replace("- five", "- six").encode()
    code, out, err = invoke("sleep", "adopt", "--all")
    assert code == 2 and "**fmt**: refused proposal" in out and "Why fmt was refused:" in out


def test_adopt_all_exits_0_when_every_skill_was_adopted(two: Two) -> None:
    code, out, err = invoke("adopt", "--all", "--format", "md")
    assert code == 0, err
    assert "2 adopted, 0 refused" in out and "**review-pr**: adopted" in out and "**fmt**: adopted" in out
    assert two.review.read_bytes() == REVIEW_NEW.encode() and two.fmt.read_bytes() == FMT_NEW.encode()
    code, _, err = invoke("adopt", "--all")
    assert code == 2 and "there is no pending accepted proposal" in err


@pytest.mark.parametrize("args", [("review-pr",), ("20261205-000000-abcd",), ("--edits", "1"), ("--force",)])
def test_adopt_all_with_a_name_id_edits_or_force_is_a_usage_error(two: Two, args: tuple[str, ...]) -> None:
    code, _, err = invoke("adopt", "--all", *args)
    assert code == 2 and "--all adopts the newest accepted proposal of every skill: give it without" in err
    assert two.review.read_bytes() == REVIEW.encode() and two.fmt.read_bytes() == FMT.encode()


def test_reject_by_name_remembers_in_that_skills_memory_only(two: Two) -> None:
    code, out, err = invoke("reject", "review-pr", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["proposal"]["id"] == two.review_id and r["remembered"] == 2
    nights = Nights(two.data)
    assert Path(r["memory"]) == nights.memory_path(str(two.review))
    assert [(e.edit.content, e.proposal) for e in nights.memory(str(two.review)).rejected] == [
        ("- TWO", two.review_id),
        ("- five", two.review_id),
    ]
    assert not nights.memory_path(str(two.fmt)).exists()  # fmt's memory: nothing joined it
    assert two.status(two.fmt_id) == "staged" and two.status(two.review_id) == "rejected"
    assert two.review.read_bytes() == REVIEW.encode() and two.fmt.read_bytes() == FMT.encode()


def test_rollback_by_name_restores_that_skill_only(two: Two) -> None:
    assert invoke("adopt", "review-pr")[0] == 0
    assert invoke("adopt", "fmt")[0] == 0  # fmt changed last: a bare rollback would undo it
    code, out, err = invoke("rollback", "review-pr", "--json")
    assert code == 0, err
    assert json.loads(out)["skill_path"] == str(two.review)
    assert two.review.read_bytes() == REVIEW.encode()
    assert two.fmt.read_bytes() == FMT_NEW.encode()  # untouched
    code, _, err = invoke("rollback", "fmt", "2")
    assert code == 2 and "only 1 change(s)" in err and two.fmt.read_bytes() == FMT_NEW.encode()
    code, _, err = invoke("rollback", "nope")
    assert code == 2 and "no adopt of a skill called 'nope' is recorded" in err and "fmt (" in err
    code, _, err = invoke("rollback", str(two.fmt))  # a file's path names its skill too
    assert code == 0, err
    assert two.fmt.read_bytes() == FMT.encode() and two.review.read_bytes() == REVIEW.encode()
    code, _, err = invoke("rollback", "1")  # a lone number is still N: the last change (fmt's rollback) undone
    assert code == 0, err
    assert two.fmt.read_bytes() == FMT_NEW.encode() and two.review.read_bytes() == REVIEW.encode()


def test_an_unknown_name_lists_the_skills_with_pending_proposals(two: Two) -> None:
    for verb in ("diff", "adopt", "reject"):
        code, _, err = invoke(verb, "reveiw-pr")
        assert code == 2, (verb, err)
        assert "'reveiw-pr' is not a staged proposal nor the name of a skill with one" in err
        assert f"review-pr ({two.review})" in err and f"fmt ({two.fmt})" in err
    code, out, _ = invoke("sleep", "adopt", "reveiw-pr")
    assert code == 2 and out.startswith("**Error:** 'reveiw-pr' is not a staged proposal")
    assert two.review.read_bytes() == REVIEW.encode() and two.fmt.read_bytes() == FMT.encode()


def test_a_name_of_two_skills_is_refused_naming_their_files(two: Two, tmp_path: Path) -> None:
    other = tmp_path / "project" / ".claude" / "skills" / "review-pr" / "SKILL.md"
    other.parent.mkdir(parents=True)
    other.write_text(REVIEW)
    theirs = two.stage(other, REVIEW_NEW)
    code, _, err = invoke("adopt", "review-pr")
    assert code == 2 and "'review-pr' names 2 skills with pending proposals" in err
    assert f"{two.review} (newest: {two.review_id})" in err and f"{other} (newest: {theirs})" in err
    assert "by its proposal id" in err
    assert other.read_text() == REVIEW and two.review.read_bytes() == REVIEW.encode()


def test_a_name_whose_newest_proposal_was_not_accepted_says_how_to_force_it(two: Two) -> None:
    code, _, _ = invoke("reject", "fmt")
    assert code == 0
    weak = two.stage(two.fmt, FMT_NEW, accepted=False)
    code, _, err = invoke("adopt", "fmt")
    assert code == 2 and f"`skillsleep adopt {weak} --force`" in err and two.fmt.read_bytes() == FMT.encode()
    code, out, err = invoke("diff", "fmt", "--json")  # diff and reject take it: accepted or not
    assert code == 0 and json.loads(out)["id"] == weak


def test_a_section_is_named_as_skills_lists_it(two: Two, tmp_path: Path) -> None:
    agents = tmp_path / "project" / "AGENTS.md"
    agents.parent.mkdir(parents=True)
    agents.write_text("# Project\n\n## Testing\n\n- run pytest\n")
    pid = two.stage(agents, "# Project\n\n## Testing\n\n- run pytest -q\n", details={"section": "Testing"})
    for name in ("AGENTS.md#Testing", "Testing"):
        code, out, err = invoke("diff", name, "--json")
        assert code == 0 and json.loads(out)["id"] == pid, err


def test_status_lists_each_skill_and_narrows_to_one(two: Two) -> None:
    code, out, err = invoke("status", "--format", "text")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("- ") and " for " in line]
    assert lines[0].startswith(f"- fmt: {two.fmt_id} for {two.fmt}: accepted")
    assert lines[1].startswith(f"- review-pr: {two.review_id} for {two.review}: accepted")
    assert "`skillsleep adopt --all` each skill's" in out
    md = invoke("status", "--format", "md")[1]
    assert f"- **fmt**: Proposal `{two.fmt_id}`" in md and f"- **review-pr**: Proposal `{two.review_id}`" in md
    s = json.loads(invoke("status", "--json")[1])
    assert [(p["skill"], p["id"]) for p in s["pending"]] == [("review-pr", two.review_id), ("fmt", two.fmt_id)]
    code, out, err = invoke("status", "review-pr", "--json")
    assert code == 0, err
    s = json.loads(out)
    assert [p["id"] for p in s["pending"]] == [two.review_id]
    assert {a["skill_path"] for a in s["actions"]} == {str(two.review)}
    code, out, _ = invoke("status", "review-pr", "--format", "text")
    assert "Pending proposals (1)" in out and f"- {two.review_id} for {two.review}" in out and "adopt --all" not in out
    code, _, err = invoke("status", "nope")
    assert code == 2 and "no proposal or night of a skill called 'nope'" in err and "review-pr (" in err


def test_sleep_verbs_take_a_skill_name_as_typed(two: Two) -> None:
    code, out, err = invoke("sleep", "--line", "adopt review-pr")
    assert code == 0, err
    assert out.startswith(f"Adopted proposal `{two.review_id}`") and "`/sleep rollback`" in out
    assert two.review.read_bytes() == REVIEW_NEW.encode() and two.fmt.read_bytes() == FMT.encode()
    code, out, err = invoke("sleep", "adopt", "--all")
    assert code == 0, err
    assert "1 adopted, 0 refused" in out and "**fmt**: adopted" in out and "`/sleep rollback SKILL`" in out
    assert two.fmt.read_bytes() == FMT_NEW.encode()


def test_a_skill_is_named_by_its_frontmatter_its_folder_or_its_file(two: Two, tmp_path: Path) -> None:
    plain = tmp_path / "skills" / "no-front" / "SKILL.md"  # no frontmatter: its folder's name
    plain.parent.mkdir(parents=True)
    plain.write_text("- be brief\n")
    agents = tmp_path / "AGENTS.md"  # a whole instruction file: its file name
    agents.write_text("# Rules\n- be brief\n")
    new = tmp_path / "skills" / "fresh" / "SKILL.md"  # not there yet: named from the candidate
    ids = {
        "no-front": two.stage(plain, "- be brief\n- cite\n"),
        "AGENTS.md": two.stage(agents, "# Rules\n- be brief\n- cite\n"),
        "fresh-one": two.stage(new, "---\nname: fresh-one\n---\n- cite\n"),
    }
    props = Proposals(two.data)
    assert {props.skill(props.get(pid)).name for pid in ids.values()} == set(ids)
    for name, pid in ids.items():
        code, out, err = invoke("diff", name, "--json")
        assert code == 0 and json.loads(out)["id"] == pid, (name, err)


def test_rollback_of_a_name_in_two_files_asks_for_the_path(two: Two, tmp_path: Path) -> None:
    other = tmp_path / "project" / "skills" / "review-pr" / "SKILL.md"
    other.parent.mkdir(parents=True)
    other.write_text(REVIEW)
    theirs = two.stage(other, REVIEW_NEW)
    assert invoke("adopt", theirs)[0] == 0 and invoke("adopt", two.review_id)[0] == 0
    code, _, err = invoke("rollback", "review-pr")
    assert code == 2 and "'review-pr' names skills in 2 files" in err and "`skillsleep rollback PATH`" in err
    assert two.review.read_bytes() == REVIEW_NEW.encode() and other.read_text() == REVIEW_NEW
    code, _, err = invoke("rollback", str(other))
    assert code == 0, err
    assert other.read_text() == REVIEW and two.review.read_bytes() == REVIEW_NEW.encode()


def test_an_adopt_supersedes_its_skills_older_pending_proposals_and_no_other_skills(two: Two) -> None:
    """review-pr has two pending proposals (the fixture's and a newer one), fmt one: adopting review-pr's
    newest supersedes its older one only; adopt, reject and diff of it say by which (exit 2)."""
    newer = two.stage(two.review, REVIEW_NEW.replace("- five", "- six"), accepted=False)
    code, out, err = invoke("adopt", newer, "--force", "--format", "text")
    assert code == 0, err
    assert f"superseded (older proposals of this skill, staged before this adopt): {two.review_id}" in out
    assert two.status(two.review_id) == "superseded" and two.status(two.fmt_id) == "staged"
    assert two.fmt.read_bytes() == FMT.encode()
    stored = json.loads((two.data / "staging" / two.review_id / "proposal.json").read_text())
    assert (stored["status"], stored["superseded_by"]) == ("superseded", newer)
    fmt_stored = json.loads((two.data / "staging" / two.fmt_id / "proposal.json").read_text())
    assert "superseded_by" not in fmt_stored  # a proposal never superseded is written as it always was
    history = [json.loads(line) for line in (two.data / "history.jsonl").read_text().splitlines()]
    line = next(h for h in history if h["kind"] == "supersede")
    assert line["proposal_id"] == two.review_id and f"superseded by {newer}" in line["detail"]
    assert [h["proposal_id"] for h in history if h["kind"] == "supersede"] == [two.review_id]
    for verb in ("adopt", "reject", "diff"):
        code, _, err = invoke(verb, two.review_id)
        assert code == 2 and f"proposal {two.review_id} was superseded by {newer}" in err, (verb, err)
    assert two.status(two.review_id) == "superseded"  # a refused reject changed nothing
    code, out, err = invoke("status", "--json")
    assert code == 0, err
    status = json.loads(out)
    assert [p["id"] for p in status["pending"]] == [two.fmt_id]
    assert any(a["kind"] == "supersede" and a["proposal_id"] == two.review_id for a in status["actions"])
    code, out, err = invoke("adopt", "fmt")  # the other skill still adopts as staged
    assert code == 0, err
    assert two.fmt.read_bytes() == FMT_NEW.encode()


def test_a_proposal_written_before_superseded_existed_still_loads(two: Two) -> None:
    path = two.data / "staging" / two.review_id / "proposal.json"
    old = json.loads(path.read_text())
    assert "superseded_by" not in old and old["status"] == "staged"
    code, out, err = invoke("adopt", two.review_id, "--json")
    assert code == 0, err
    assert json.loads(out)["superseded"] == []


def test_a_rollback_of_the_adopt_leaves_the_superseded_proposal_superseded(two: Two) -> None:
    newer = two.stage(two.review, REVIEW_NEW.replace("- five", "- six"))
    code, _, err = invoke("adopt", "review-pr")
    assert code == 0, err
    assert two.status(newer) == "adopted"
    code, _, err = invoke("rollback", "review-pr")
    assert code == 0, err
    assert two.review.read_bytes() == REVIEW.encode() and two.status(two.review_id) == "superseded"
    code, _, err = invoke("adopt", "review-pr")
    assert code == 2 and "has no pending proposal" in err and f"{newer}, was adopted" in err
