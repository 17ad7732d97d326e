"""Reading a file the user named (a task file, a run config, a skill): its text, or one error
that says what the file is and what to do.

- It must be a regular file: a folder, a pipe, a device (`/dev/zero`) or a socket is refused
  before it is opened, so nothing blocks or reads forever; at most `MAX_BYTES` are read.
- The encoding comes from a byte-order mark — UTF-8, UTF-16 LE/BE (what Windows PowerShell's
  `>` writes), UTF-32 LE/BE — else the text must be strict UTF-8. Line endings are kept as they
  are (the readers handle CRLF).
- A byte that does not decode, or a NUL character (a binary file, or UTF-16 without its mark), is
  an error naming the file, the line and the byte offset, and saying to save the file as UTF-8.
"""

from __future__ import annotations

import codecs
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from skillsleep.core.shared.errors import ConfigError

__all__ = ["MAX_BYTES", "load_toml", "read_text_file", "user_path"]

MAX_BYTES = 64 * 1024 * 1024

# longest first: the UTF-32 LE mark starts with the UTF-16 LE one
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_SAVE = "save it as UTF-8 (your editor's “Save with encoding”, or `iconv -t UTF-8`)"


def read_text_file(path: Path, what: str, *, shown: str | None = None, instead: str = "a text file") -> str:
    """The text of the file at `path`; ConfigError otherwise. `what` names it in messages ("task
    file"), `shown` is how to write its path (default: as given), `instead` what to give in place
    of a folder or a special file ("a JSONL task file")."""
    name = shown or str(path)
    data = _read_bytes(Path(path), what, name, instead)
    bom, codec = next(((b, c) for b, c in _BOMS if data.startswith(b)), (b"", "utf-8"))
    body = data[len(bom) :]
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        where = _where(body, exc.start, codec, len(bom))
        raise ConfigError(
            f"{what} {name} is not {_label(codec)} text: the byte 0x{body[exc.start]:02x} {where} "
            f"cannot be read as {_label(codec)}; {_SAVE}."
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        at = len(text[:nul].encode(codec))
        raise ConfigError(
            f"{what} {name} holds a NUL character {_where(body, at, codec, len(bom))}: it is a "
            f"binary file, or UTF-16 text without a byte-order mark; give a text file — {_SAVE}."
        )
    return text


def load_toml(text: str, name: str, *, fix: str = "fix the file") -> dict[str, Any]:
    """The TOML document `text` (from the file `name`); ConfigError "name: invalid TOML: why; fix"
    for anything the parser refuses, nesting too deep for it, or a number too long to read."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = f" (line {text.count(chr(10)) + 1})" if "end of document" in str(exc) else ""
        why = f"{exc}{where}"
    except RecursionError:
        why = "nested too deeply"
    except ValueError as exc:  # an integer of thousands of digits: Python's int() refuses it
        why = f"a number is too long ({str(exc).split(':')[0]})"
    raise ConfigError(f"{name}: invalid TOML: {why}; {fix}")


def user_path(text: str, what: str) -> Path:
    """A path the user wrote (in a file, a flag or an environment variable) with `~` and `~user`
    expanded; ConfigError naming `what` ("[data] tasks in run.toml") when it cannot be a path: a
    NUL character in it, or a `~user` whose home is unknown."""
    if "\x00" in text:
        raise ConfigError(f"{what}: {text!r} holds a NUL character, which no path can; fix it")
    try:
        return Path(text).expanduser()
    except RuntimeError:  # pathlib's word for "no such user" or "no home directory"
        user = text[1:].split("/", 1)[0]
        who = f"the user {user!r}" if user else "the current user"
        raise ConfigError(
            f"{what}: {text!r} starts with ~ but the home directory of {who} is unknown; write the path out in full"
        ) from None


def _read_bytes(path: Path, what: str, name: str, instead: str) -> bytes:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {name}") from None
    except OSError as exc:
        raise ConfigError(
            f"{what} {name} cannot be read ({exc.strerror or exc}); check the path and its permissions"
        ) from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} {name} is a folder, not a file; give {instead}")
    if not stat.S_ISREG(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise ConfigError(f"{what} {name} is {kind}, not a regular file; give {instead}")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{what} {name} cannot be read ({exc.strerror or exc}); check its permissions") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{what} {name} is larger than {MAX_BYTES // 2**20} MiB, more than skillsleep reads; "
            f"give {instead} of a sensible size"
        )
    return data


def _where(body: bytes, at: int, codec: str, bom: int) -> str:
    """`at line L (byte offset B)` of the byte `at` of `body` (offset counted in the whole file)."""
    line = body[:at].decode(codec, errors="replace").count("\n") + 1
    return f"at line {line} (byte offset {at + bom})"


def _label(codec: str) -> str:
    return codec.upper().replace("-LE", " LE").replace("-BE", " BE")
