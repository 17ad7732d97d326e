"""`Store.stream_sessions()`: the sessions a night mines, filtered by time in the database and read
one at a time (only their keys are held), in the order `Store.sessions()` gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from skillsleep.core.mine.mining import mine
from skillsleep.core.models.store import Store
from skillsleep.core.shared.session import Session, Turn

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def put(store: Store, sid: str, *, ended: datetime | None = None, started: datetime | None = None) -> Session:
    session = Session(
        harness="chat", id=sid, started=started, ended=ended, turns=[Turn(kind="user", text=f"tidy module {sid}")]
    )
    store.put_session(session)
    return session


def test_streamed_sessions_are_the_stored_ones_since_a_time_in_the_same_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    put(store, "old", ended=T0 - timedelta(days=40))
    put(store, "recent", ended=T0 + timedelta(days=2))
    put(store, "open", started=T0 + timedelta(days=1))  # no end yet: its start counts
    put(store, "open-old", started=T0 - timedelta(days=9))
    put(store, "timeless")  # no time at all: always mined
    everything = store.stream_sessions()
    assert len(everything) == 5 and list(everything) == store.sessions()
    since = store.stream_sessions(since=T0)
    assert len(since) == 3 and sorted(s.id for s in since) == ["open", "recent", "timeless"]
    store.close()


def test_sessions_are_read_when_iterated_and_one_forgotten_meanwhile_is_skipped(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    a = put(store, "a", ended=T0)
    b = put(store, "b", ended=T0 + timedelta(hours=1))
    b.source = "log.jsonl"
    store.put_session(b)
    stream = store.stream_sessions()
    changed = a.model_copy(update={"turns": [Turn(kind="user", text="rename the loader")]})
    store.put_session(changed)  # after listing, before reading: the stream reads what is stored now
    store.delete_sessions_from("log.jsonl")
    assert len(stream) == 2 and [s.turns[0].text for s in stream] == ["rename the loader"]
    store.close()


async def test_mining_a_stream_finds_what_mining_the_loaded_sessions_finds(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    for n in range(6):
        put(store, f"s{n}", ended=T0 + timedelta(hours=n))
    streamed, loaded = await mine(store.stream_sessions()), await mine(store.sessions())
    assert streamed == loaded and streamed.intake.sessions == 6 and streamed.tasks[0].recurrence == 6
    store.close()
