"""Files the user names (task files, run configs, skills): text by byte-order mark or strict UTF-8,
and one clean error for anything else (a folder, a pipe, a device, a huge or binary file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from skillsleep.core.document.textfile import MAX_BYTES, read_text_file
from skillsleep.core.shared.errors import ConfigError

TEXT = 'première ligne\r\nsecond: "ok"\n'


@pytest.mark.parametrize(
    "encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
def test_text_is_read_by_its_byte_order_mark_and_line_endings_are_kept(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "f.txt"
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff", "utf-32-le": "\ufeff", "utf-32-be": "\ufeff"}.get(encoding, "")
    path.write_bytes((bom + TEXT).encode(encoding))  # "utf-16"/"utf-32"/"utf-8-sig" write their own mark
    assert read_text_file(path, "task file") == TEXT


def test_a_latin1_byte_is_named_by_line_and_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
    with pytest.raises(ConfigError) as info:
        read_text_file(path, "task file")
    msg = str(info.value)
    assert str(path) in msg and "the byte 0xe9 at line 2 (byte offset 19)" in msg and "save it as UTF-8" in msg


def test_a_bad_byte_in_utf16_text_is_named_by_its_offset_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes("\ufeffab\ncd".encode("utf-16-le") + b"\x00\xdc")  # a lone low surrogate at byte 12
    with pytest.raises(ConfigError, match=r"line 2 .*offset 12"):
        read_text_file(path, "task file")


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1),
        (b"ok\nstill ok\nnul \x00 here\n", 3),
        ('{"id": "a"}\n'.encode("utf-16-le"), 1),  # UTF-16 without a byte-order mark
    ],
)
def test_binary_or_nul_bytes_are_not_text(tmp_path: Path, data: bytes, line: int) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        read_text_file(path, "task file")
    msg = str(info.value)
    assert f"line {line}" in msg and "offset" in msg and "UTF-8" in msg, msg


def test_missing_file_and_folder_say_what_they_are_and_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^task file not found: .*nope\.jsonl"):
        read_text_file(tmp_path / "nope.jsonl", "task file")
    (tmp_path / "tasks").mkdir()
    with pytest.raises(ConfigError, match=r"task file .*tasks is a folder, not a file; give a JSONL task file"):
        read_text_file(tmp_path / "tasks", "task file", instead="a JSONL task file")


def test_a_device_is_refused_without_reading_it() -> None:
    with pytest.raises(ConfigError, match=r"/dev/zero is a device, not a regular file"):
        read_text_file(Path("/dev/zero"), "run config")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    failure: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(failure, fifo), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # the old reader blocked here for a writer that never comes
        os.close(os.open(fifo, os.O_WRONLY))  # let it go
        pytest.fail("reading a FIFO blocked")
    assert failure and "is a pipe, not a regular file" in str(failure[0])


def _catch(into: list[BaseException], path: Path) -> None:
    try:
        read_text_file(path, "task file")
    except ConfigError as exc:
        into.append(exc)


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ConfigError, match=r"huge\.jsonl is larger than 64 MiB"):
        read_text_file(path, "task file")


def test_an_unreadable_file_says_to_check_its_permissions(tmp_path: Path) -> None:
    link = tmp_path / "loop.jsonl"
    link.symlink_to(link)  # ELOOP, raised for root too
    with pytest.raises(ConfigError, match=r"loop\.jsonl cannot be read .*check"):
        read_text_file(link, "task file")
