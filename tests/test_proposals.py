"""Staging, adopt / reject / rollback, conflicts, and a kill in the middle of an adopt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from skillsleep.core.report.proposal_record import ABSENT, Conflict, file_hash
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.errors import ConfigError

OLD = "---\nname: fmt\n---\n- answer briefly\n"
NEW = "---\nname: fmt\n---\n- answer briefly\n- end with `Answer: <value>`\n"


@pytest.fixture
def live(tmp_path: Path) -> Path:
    path = tmp_path / "skills" / "fmt" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(OLD)
    path.chmod(0o640)
    return path


def test_stage_does_not_touch_the_live_file(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=True, reason="0.40 → 0.70", files={"report.md": "# night 1\n"})
    assert live.read_text() == OLD
    folder = tmp_path / "data" / "staging" / p.id
    assert (folder / "SKILL.md").read_text() == NEW
    assert (folder / "report.md").read_text() == "# night 1\n"
    assert "+- end with `Answer: <value>`" in (folder / "diff.patch").read_text()
    assert p.base_hash == file_hash(live) and p.status == "staged"
    assert [a.kind for a in props.history()] == ["stage"]


def test_restaged_report_files_are_replaced_whole_keeping_their_mode(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=True, reason="better", files={"report.md": "# staged\n"})
    report = tmp_path / "data" / "staging" / p.id / "report.md"
    report.chmod(0o640)
    props.restage_files(p, {"report.md": "# adopted\n"})
    assert report.read_text() == "# adopted\n" and report.stat().st_mode & 0o777 == 0o640
    assert sorted(f.name for f in report.parent.iterdir() if f.name.startswith(".")) == []  # no temporary file left
    assert live.read_text() == OLD and [a.kind for a in props.history()] == ["stage"]


def test_adopt_newest_accepted_backs_up_and_keeps_mode(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    good = props.stage(live, NEW, accepted=True, reason="better")
    props.stage(live, OLD + "- noise\n", accepted=False, reason="no gain")  # newer, but not accepted
    adopted = props.adopt().proposal
    assert adopted.id == good.id and adopted.status == "adopted"
    assert live.read_text() == NEW
    assert live.stat().st_mode & 0o777 == 0o640
    action = props.history()[-1]
    assert action.kind == "adopt" and action.backup is not None
    assert (Path(action.backup) / "SKILL.md").read_text() == OLD
    with pytest.raises(ConfigError, match="already adopted"):
        props.adopt(good.id)


def test_adopt_refuses_unaccepted_unless_forced(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=False, reason="0.50 is not above 0.50")
    with pytest.raises(ConfigError, match="no pending accepted proposal"):
        props.adopt()
    with pytest.raises(ConfigError, match="not accepted by the gate.*--force"):
        props.adopt(p.id)
    assert live.read_text() == OLD
    props.adopt(p.id, force=True)
    assert live.read_text() == NEW


def test_adopt_refuses_when_user_edited_and_shows_both_changes(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=True, reason="better")
    edited = OLD + "- my own rule\n"
    live.write_text(edited)
    with pytest.raises(Conflict) as err:
        props.adopt()
    message = str(err.value)
    assert "+- my own rule" in message  # the user's edit
    assert "+- end with `Answer: <value>`" in message  # the proposal's edit
    assert "--force" in message
    assert live.read_text() == edited and props.get(p.id).status == "staged"
    props.adopt(force=True)
    assert live.read_text() == NEW
    assert (Path(props.history()[-1].backup or "") / "SKILL.md").read_text() == edited


def test_reject_and_prefix_lookup(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=True, reason="better")
    assert props.reject(p.id[:12]).status == "rejected"
    with pytest.raises(ConfigError, match="no pending accepted proposal"):
        props.adopt()
    with pytest.raises(ConfigError, match="is not a staged proposal"):
        props.get("nope")
    assert live.read_text() == OLD


def test_rollback_restores_step_by_step_and_is_undoable(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    v2 = OLD + "- two\n"
    v3 = v2 + "- three\n"
    props.adopt(props.stage(live, v2, accepted=True, reason="r").id)
    props.adopt(props.stage(live, v3, accepted=True, reason="r").id)
    assert live.read_text() == v3
    props.rollback(2)
    assert live.read_text() == OLD
    props.rollback(1)  # undo the rollback itself
    assert live.read_text() == v3
    with pytest.raises(ConfigError, match="roll back at most"):
        props.rollback(9)


def test_rollback_of_a_new_managed_skill_removes_it(tmp_path: Path) -> None:
    props = Proposals(tmp_path / "data")
    target = tmp_path / "learned" / "SKILL.md"
    p = props.stage(target, NEW, accepted=True, reason="first")
    assert p.base_hash == ABSENT
    props.adopt()
    assert target.read_text() == NEW
    props.rollback()
    assert not target.exists()


def test_nothing_to_roll_back(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nothing to roll back"):
        Proposals(tmp_path / "data").rollback()


_ADOPT_LOOP = textwrap.dedent(r"""
    import sys
    from pathlib import Path
    from skillsleep.core.report.proposals import Proposals
    data, live = Path(sys.argv[1]), Path(sys.argv[2])
    props = Proposals(data)
    big_old, big_new = "- old line\n" * 20000, "- new line\n" * 20000
    print("ready", flush=True)
    i = 0
    while True:  # adopt alternating versions forever; the parent kills us mid-write
        text = big_new if i % 2 == 0 else big_old
        props.adopt(props.stage(live, text, accepted=True, reason="loop").id, force=True)
        i += 1
""")


def test_kill_during_adopt_leaves_old_or_new_never_torn(tmp_path: Path, live: Path) -> None:
    big_old = "- old line\n" * 20000
    big_new = "- new line\n" * 20000
    live.write_text(big_old)
    for round_ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", _ADOPT_LOOP, str(tmp_path / "data"), str(live)], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        # let it adopt a few times, then kill it at an arbitrary instant
        while len(list((tmp_path / "data" / "staging").glob("*"))) < 3 * (round_ + 1):
            assert proc.poll() is None, "the adopt loop died on its own"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert live.read_text() in (big_old, big_new)
    history = Proposals(tmp_path / "data").history()  # a torn last history line is skipped
    assert history and all(a.kind in ("stage", "adopt") for a in history)


def test_an_unreadable_proposal_is_named_not_silently_dropped(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    good = props.stage(live, NEW, accepted=True, reason="better")
    bad = props.stage(live, NEW, accepted=True, reason="also better")
    (tmp_path / "data" / "staging" / bad.id / "proposal.json").write_text("{torn")
    (tmp_path / "data" / "staging" / "20990101-000000-dead").mkdir()  # interrupted staging: no proposal.json
    assert [p.id for p in props.list()] == [good.id]
    assert len(props.problems) == 1 and bad.id in props.problems[0] and "delete the folder" in props.problems[0]
    assert props.adopt().proposal.id == good.id


# --- line endings, final newline and BOM survive byte for byte ------------------------------------

ENDINGS = {  # the live file's bytes, and the candidate a night would stage for it (one line added)
    "crlf": (
        b"---\r\nname: fmt\r\n---\r\n- answer briefly\r\n",
        b"---\r\nname: fmt\r\n---\r\n- answer briefly\r\n- end with `Answer: <value>`\r\n",
    ),
    "mixed": (
        b"---\r\nname: fmt\n---\r\n- answer briefly\n- keep it short\r\n",
        b"---\r\nname: fmt\n---\r\n- answer briefly\n- keep it short\r\n- end with `Answer: <value>`\r\n",
    ),
    "no-final-newline": (
        b"---\nname: fmt\n---\n- answer briefly",
        b"---\nname: fmt\n---\n- answer briefly\n- end with `Answer: <value>`",
    ),
    "bom": (
        "\ufeff---\r\nname: fmt\r\n---\r\n- answer briefly\r\n".encode(),
        "\ufeff---\r\nname: fmt\r\n---\r\n- answer briefly\r\n- end with `Answer: <value>`\r\n".encode(),
    ),
}


@pytest.mark.parametrize("kind", ENDINGS)
def test_adopt_rollback_and_forced_adopt_keep_every_byte(tmp_path: Path, kind: str) -> None:
    original, candidate = ENDINGS[kind]
    live = tmp_path / "SKILL.md"
    live.write_bytes(original)
    props = Proposals(tmp_path / "data")
    p = props.stage(live, candidate.decode("utf-8"), accepted=True, reason="better")
    assert (tmp_path / "data" / "staging" / p.id / "SKILL.md").read_bytes() == candidate
    assert (tmp_path / "data" / "staging" / p.id / "base.md").read_bytes() == original
    props.adopt()
    assert live.read_bytes() == candidate
    assert (Path(props.history()[-1].backup or "") / "SKILL.md").read_bytes() == original
    props.rollback()
    assert live.read_bytes() == original
    props.rollback()  # undo the rollback
    assert live.read_bytes() == candidate
    props.rollback(3)
    assert live.read_bytes() == original

    # adopt --force over the user's own edit: the edit is backed up byte for byte
    q = props.stage(live, candidate.decode("utf-8"), accepted=True, reason="again")
    edited = original.replace(b"briefly", b"very briefly")
    live.write_bytes(edited)
    with pytest.raises(Conflict):
        props.adopt(q.id)
    assert live.read_bytes() == edited
    props.adopt(q.id, force=True)
    assert live.read_bytes() == candidate
    assert (Path(props.history()[-1].backup or "") / "SKILL.md").read_bytes() == edited


def test_diff_shows_a_change_of_line_endings(tmp_path: Path) -> None:
    lf = "---\nname: fmt\n---\n- answer briefly\n"
    live = tmp_path / "SKILL.md"
    live.write_bytes(lf.replace("\n", "\r\n").encode())
    props = Proposals(tmp_path / "data")
    p = props.stage(live, lf, accepted=True, reason="same words, LF endings")
    diff = props.diff(p)
    assert "-- answer briefly\r\n" in diff and "+- answer briefly\n" in diff
    assert props.line_endings(p) == {"live": "CRLF", "proposal": "LF"}


def test_an_action_after_a_torn_history_line_starts_on_a_line_of_its_own(tmp_path: Path, live: Path) -> None:
    props = Proposals(tmp_path / "data")
    p = props.stage(live, NEW, accepted=True, reason="better")
    history = tmp_path / "data" / "history.jsonl"
    history.write_bytes(history.read_bytes() + b'{"time": "2026-11-30T1')  # a kill cut this write short
    props.adopt(p.id)
    assert [a.kind for a in props.history()] == ["stage", "adopt"]
    assert [n for n, _ in props.bad_history] == [2]  # and nothing else was lost
    assert props.bad_history[0][1].startswith("not valid JSON: ")
