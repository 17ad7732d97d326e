"""Redaction against the field corpus (tests/fixtures/secrets/field*.py): the secret scanners' own
sample shapes in a transcript's contexts, and the non-secrets they list as false positives.

Each kind is its own test in each context, so a regression names its kind. A (kind, context) that
the redactor is known to miss is listed in `field_known_misses.txt`: its test is an expected
failure, strict, so catching it fails the test until the line is removed.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secret_corpus import FIXTURES, load

from skillsleep.core.privacy.redact import Redactor

F = load("field")
S = load("field_special")
C = load("field_clean")
KNOWN_MISSES = {
    tuple(line.split()) for line in (FIXTURES / "field_known_misses.txt").read_text().splitlines() if line.strip()
}
ANNOUNCED = ("export", "named", "header")
TARGETS = {"announced": 0.99, "alone": 0.95, "private-key": 1.0, "url-password": 1.0}
CLEAN_CHANGED_MAX = 0.02
# what secrets and their contexts are made of, with the characters that end or quote them
ALPHABET = "aZ09_-./+=:@ \n\t\"'`$~[](){}ghp_sk-xoxbAKIAtokenpasswordBearer"


def _group(sample: F.Sample, context: str) -> str:
    if context == "structured":
        return sample.kind
    if context == "alone":
        return "alone" if sample.prefixed else "alone-unprefixed"
    return context


def _by_kind() -> dict[tuple[str, str], list[tuple[str, str]]]:
    out: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for sample, context, text in F.cases() + S.SPECIAL:
        group = _group(sample, context)
        if group != "alone-unprefixed":  # no target: a random value with no name next to it
            out[(sample.kind, group)].append((sample.secret, text))
    return out


BY_KIND = _by_kind()


def _param(key: tuple[str, str]) -> object:
    marks = [pytest.mark.xfail(strict=True, reason="known miss")] if key in KNOWN_MISSES else []
    return pytest.param(key, marks=marks, id=f"{key[0]}-{key[1]}")


@pytest.mark.parametrize("key", [_param(k) for k in sorted(BY_KIND)])
def test_every_sample_of_the_kind_is_caught(key: tuple[str, str]) -> None:
    leaked = [text for secret, text in BY_KIND[key] if not F.caught(secret, text, Redactor().text(text))]
    assert leaked == []


@pytest.mark.parametrize("kind", ["aws-secret-access-key", "cohere-api-token", "okta-access-token"])
def test_a_generated_value_alone_on_a_line_is_caught_without_a_name(kind: str) -> None:
    alone = [(s.secret, t) for s, c, t in F.cases() if s.kind == kind and c == "alone"]
    assert alone and all(F.caught(secret, text, Redactor().text(text)) for secret, text in alone)


def test_known_misses_name_real_cases() -> None:
    assert not KNOWN_MISSES - set(BY_KIND)


def rates() -> dict[str, tuple[int, int]]:
    """(caught, total) for each context group, and for the clean lines (changed, total)."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sample, context, text in F.cases() + S.SPECIAL:
        group = _group(sample, context)
        for g in (group, "announced") if context in ANNOUNCED else (group,):
            tally[g][0] += F.caught(sample.secret, text, Redactor().text(text))
            tally[g][1] += 1
    changed = sum(Redactor().text(line) != line for line in C.CLEAN)
    tally["clean-changed"] = [changed, len(C.CLEAN)]
    return {g: (c, n) for g, (c, n) in tally.items()}


def test_the_issue_targets_hold() -> None:
    r = rates()
    assert {g: round(r[g][0] / r[g][1], 3) for g in TARGETS if r[g][0] / r[g][1] < TARGETS[g]} == {}
    assert r["clean-changed"][0] / r["clean-changed"][1] <= CLEAN_CHANGED_MAX


def test_clean_lines_change_at_most_two_percent() -> None:
    changed = [line for line in C.CLEAN if Redactor().text(line) != line]
    assert len(changed) / len(C.CLEAN) <= CLEAN_CHANGED_MAX, changed


def test_corpus_is_large_and_has_provenance() -> None:
    assert len(F.SAMPLES) >= 400 and len({s.kind for s in F.SAMPLES}) >= 130
    assert all(s.source[0] and s.source[1] for s in F.SAMPLES)
    assert len(C.CLEAN) >= 900


if __name__ == "__main__":  # print the table: python tests/test_redact_field.py
    for group, (c, n) in sorted(rates().items()):
        print(f"{group:20s} {c:4d}/{n:<4d} {100 * c / n:5.1f}%")


def test_both_scan_engines_redact_the_field_corpus_alike() -> None:
    texts = [text for _, _, text in F.cases() + S.SPECIAL] + C.CLEAN
    assert [Redactor(engine="python").text(t) for t in texts] == [Redactor().text(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(ALPHABET)), max_size=300))
def test_any_text_redacts_without_error_and_a_second_pass_changes_nothing(text: str) -> None:
    once = Redactor().text(text)
    assert Redactor().text(once) == once
