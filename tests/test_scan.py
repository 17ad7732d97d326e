"""core/privacy/scan.py: one pass finds which literals and regexes a text holds, and where located regexes end."""

from __future__ import annotations

import pytest

from skillsleep.core.privacy.scan import ENGINE, LiteralScan

TEXTS = ["", "plain words", "Token: x and ghp_", "café — GHP_ ✓ key=1\nkey=2", "k\u212aey=3", "x" * 50]


def _scan(engine: str) -> LiteralScan:
    return LiteralScan(["ghp_", "key"], ["token"], [r"gh[pousr]_"], [r"key="], engine=engine)


@pytest.mark.skipif(ENGINE != "hyperscan", reason="needs the hyperscan wheel")
def test_both_engines_find_the_same_literals_and_regexes() -> None:
    fast, plain = _scan("hyperscan"), _scan("python")
    assert fast.locates and not plain.locates
    assert [fast.scan(t)[0] for t in TEXTS] == [plain.scan(t)[0] for t in TEXTS]
    assert plain.scan(TEXTS[3])[1] is None  # no places without Hyperscan


@pytest.mark.skipif(ENGINE != "hyperscan", reason="needs the hyperscan wheel")
def test_located_ends_are_offsets_in_the_str_beyond_ascii() -> None:
    text = "café — ✓ key=1\nkey=2 \U0001f600 key="
    present, ends = _scan("hyperscan").scan(text)
    assert ends is not None and "key=" in present
    assert ends["key="] == [i + len("key=") for i in range(len(text)) if text.startswith("key=", i)]


def test_a_pattern_beyond_ascii_is_refused() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        LiteralScan(["café"], [])
