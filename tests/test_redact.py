"""Secret redaction against a planted-secret corpus and a corpus of look-alikes that must survive."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from skillsleep.core.privacy.redact import REDACTED, Redactor, secret_name
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.session import Session, Turn

FIXTURES = Path(__file__).parent / "fixtures" / "secrets"


def _load_planted() -> ModuleType:
    spec = importlib.util.spec_from_file_location("planted_secrets", FIXTURES / "planted.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


P = _load_planted()
CORPUS = "\n\n".join(context for _, _, context in P.PLANTED)
FALSE_POSITIVES = (FIXTURES / "false_positives.txt").read_text()


def _leaks(text: str) -> list[str]:
    return [
        f"{kind}: {frag[:12]}…" for kind, secret, _ in P.PLANTED for frag in P.secret_fragments(secret) if frag in text
    ]


def test_corpus_is_big_and_covers_every_kind() -> None:
    kinds = {kind for kind, _, _ in P.PLANTED}
    assert len(P.PLANTED) >= 30
    assert {
        "openai_key", "anthropic_key", "deepseek_key", "google_api_key", "github_token", "gitlab_token",
        "slack_token", "stripe_key", "aws_access_key", "aws_secret_key", "huggingface_token", "npm_token",
        "twilio_key", "sendgrid_key", "bearer_token", "jwt", "private_key", "url_password", "keyed_secret",
        "keyword_secret",
    } <= kinds  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "secret", "context"), P.PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(P.PLANTED)]
)
def test_each_planted_secret_is_replaced_by_its_kind(kind: str, secret: str, context: str) -> None:
    r = Redactor()
    out = r.text(context)
    assert not [f for f in P.secret_fragments(secret) if f in out]
    assert REDACTED.format(kind=kind) in out
    assert r.counts == Counter({kind: 1}), out


def test_no_planted_secret_survives_the_whole_corpus() -> None:
    r = Redactor()
    out = r.text(CORPUS)
    assert _leaks(out) == []
    assert r.counts == Counter(kind for kind, _, _ in P.PLANTED)


def test_context_around_secrets_survives() -> None:
    out = Redactor().text(CORPUS)
    assert [kept for kept in P.KEPT if kept not in out] == []


def test_no_planted_secret_survives_in_a_redacted_session() -> None:
    contexts = [context for _, _, context in P.PLANTED]
    turns: list[Turn] = []
    kinds = ["user", "assistant", "tool_call", "tool_result", "error"]
    for i, context in enumerate(contexts):
        kind = kinds[i % len(kinds)]
        if kind == "tool_call":
            turns.append(
                Turn(
                    kind="tool_call",
                    tool="Bash",
                    call_id=f"c{i}",
                    arguments={"command": context, "nested": [{"env": context}]},
                )
            )
        else:
            turns.append(Turn(kind=kind, text=context, is_error=kind == "error"))  # type: ignore[arg-type]
    session = Session(harness="claude-code", id="s1", project="/home/jane/acme-api", turns=turns)
    before = session.model_dump_json()
    r = Redactor()
    redacted = r.session(session)
    dumped = redacted.model_dump_json()
    assert _leaks(dumped) == []
    assert _leaks(json.dumps(redacted.model_dump(mode="json"))) == []
    assert redacted.project == "/home/jane/acme-api"
    assert session.model_dump_json() == before  # the input is not modified
    assert sum(r.counts.values()) >= len(P.PLANTED)


def test_tool_arguments_with_secret_keys_are_replaced_whole() -> None:
    r = Redactor()
    args = {
        "url": "https://api.acme.dev",
        "headers": {"Authorization": "Bearer " + P.BEARER, "Accept": "application/json"},
        "password": 123456,
        "api_key": None,
        "credentials": {"user": "jane", "pw": "x"},
        "max_tokens": 1024,
        "Private_Key": P.RSA_KEY,
    }
    out = r.value(args)
    marker = REDACTED.format(kind="keyed_secret")
    assert out == {
        "url": "https://api.acme.dev",
        "headers": {"Authorization": marker, "Accept": "application/json"},
        "password": marker,
        "api_key": None,
        "credentials": marker,
        "max_tokens": 1024,
        "Private_Key": marker,
    }
    assert r.counts == Counter({"keyed_secret": 4})
    assert args["password"] == 123456  # the input is not modified


def test_only_what_holds_a_secret_is_copied() -> None:
    r = Redactor()
    clean = {"command": "ls -la", "nested": [{"path": "/tmp/x"}, ("a", 1)]}
    assert r.value(clean) is clean
    dirty = {"command": "ls", "nested": [{"env": f"export GITHUB_TOKEN={P.GHP}"}, ("a", 1)]}
    out = r.value(dirty)
    assert P.GHP in dirty["nested"][0]["env"] and P.GHP not in json.dumps(out)
    assert out["nested"][1] is dirty["nested"][1]  # the clean tuple is shared
    plain = Turn(kind="user", text="fix the failing test")
    secret = Turn(kind="tool_call", tool="Bash", arguments=dirty)
    session = Session(harness="claude-code", id="s1", turns=[plain, secret])
    redacted = r.session(session)
    assert redacted.turns[0] is plain and redacted.turns[1] is not secret
    assert session.turns[1].arguments == dirty and P.GHP not in redacted.model_dump_json()  # input kept


def test_false_positive_corpus_is_unchanged() -> None:
    r = Redactor()
    out = r.text(FALSE_POSITIVES)
    changed = [(a, b) for a, b in zip(FALSE_POSITIVES.splitlines(), out.splitlines(), strict=True) if a != b]
    assert changed == []
    assert r.counts == Counter()


@pytest.mark.parametrize(
    "name",
    [
        "DB_PASSWORD",
        "apiKey",
        "x-api-key",
        "client_secret",
        "GITHUB_TOKEN",
        "PGPASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "Authorization",
        "private_key",
        "accessToken",
        "auth",
        "GITHUB_PAT",
        "TF_TOKEN_app_terraform_io",
        "AccountKey",
        "SharedAccessKey",
        "PRIVATE-TOKEN",
    ],
)
def test_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "input_tokens",
        "token_count",
        "author",
        "PWD",
        "OLDPWD",
        "TOKENIZERS_PARALLELISM",
        "secret_name",
        "GITHUB_TOKEN_FILE",
        "key",
        "password_min_length",
        "public_token",
        "stripePublishableKey",
        "path",
    ],
)
def test_names_that_are_not_secret(name: str) -> None:
    assert not secret_name(name)


def test_redaction_is_idempotent() -> None:
    once = Redactor().text(CORPUS + "\n" + FALSE_POSITIVES)
    again = Redactor()
    assert again.text(once) == once
    assert again.counts == Counter()


def test_extra_patterns_redact_as_custom() -> None:
    r = Redactor(extra_patterns=[r"ACME-[0-9]{6}", r"internal id: (\w+)"])
    out = r.text("ticket ACME-123456 and internal id: zz9plural")
    assert out == "ticket [REDACTED:custom] and internal id: [REDACTED:custom]"
    assert r.counts == Counter({"custom": 2})
    assert r.text(out) == out


def test_invalid_extra_pattern_raises_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"\[unclosed"):
        Redactor(extra_patterns=["ok-[0-9]+", "[unclosed"])


def test_extra_pattern_matching_empty_string_is_rejected() -> None:
    with pytest.raises(ConfigError, match="empty"):
        Redactor(extra_patterns=["x*"])


def test_truncated_private_key_is_still_redacted() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(P.RSA_BODY[:3]) + "\n... (output truncated)"
    out = Redactor().text(text)
    assert not [line for line in P.RSA_BODY[:3] if line in out]


def test_empty_and_plain_text_pass_through() -> None:
    r = Redactor()
    assert r.text("") == ""
    plain = "Refactored the parser; all 42 tests pass."
    assert r.text(plain) == plain


@pytest.mark.parametrize(
    ("text", "kept", "secret"),
    [
        ("Authorization: Api-Token " + "dt0c01." + "A" * 24 + "." + "b1" * 32, "Authorization: Api-Token ", "b1b1b1b1"),
        ('if (api_key == "' + "Zq8" * 8 + '") {', 'if (api_key == "', "Zq8Zq8Zq8"),
        ('var password = @"' + "Xy7" * 6 + '";', 'var password = @"', "Xy7Xy7Xy7"),
        ("curl -u admin:" + "Pw9" * 5 + " https://x.example", "curl -u admin:", "Pw9Pw9Pw9"),
        ("AccountKey=" + "Ab3+" * 22 + ";EndpointSuffix=core", "AccountKey=", "Ab3+Ab3+"),
        ("gl" + "pat-" + "Rt5" * 10 + ".01" + "abc1234", "", "01abc1234"),
    ],
)
def test_issue_cases_keep_their_context_and_lose_the_secret(text: str, kept: str, secret: str) -> None:
    out = Redactor().text(text)
    assert kept in out and secret not in out and "[REDACTED:" in out


def test_both_scan_engines_redact_alike() -> None:
    texts = [context for _, _, context in P.PLANTED] + FALSE_POSITIVES.splitlines()
    assert [Redactor(engine="python").text(t) for t in texts] == [Redactor().text(t) for t in texts]


def _by_both_engines(texts: list[str]) -> list[str]:
    """The texts redacted with Hyperscan, asserted to be what the plain engine gives (and counts)."""
    fast, plain = Redactor(), Redactor(engine="python")
    out = [fast.text(t) for t in texts]
    assert out == [plain.text(t) for t in texts] and fast.counts == plain.counts
    return out


def test_secret_names_among_characters_beyond_ascii_are_found_by_both_engines() -> None:
    # Hyperscan finds where secret names end (one byte per character, `?` for those beyond
    # ASCII, case folded as ASCII); Python lower-cases K KELVIN SIGN to k and matches long s as s,
    # but no name holds them. Both engines must give the same text and counts.
    texts = [
        'café — api_key = "Zq8Zq8Zq8Zq8Zq8Zq8" 😀 and client_secret="Tt4Tt4Tt4Tt4"',
        "日本語 TOKEN: Ab3dEf9hIj2kLm ✓",
        "— tools --api-token Xy7Xy7Xy7Xy7Xy7X — path=/tmp/ö",
        "\u212aEY = Kk2Kk2Kk2Kk2, \u017fecret=Ss5Ss5Ss5Ss5 and secret=Rr6Rr6Rr6Rr6",
        "İstanbul password=Pw9Pw9Pw9Pw9 ﬁle",
    ]
    out = _by_both_engines(texts)
    for secret in ("Zq8Zq8Zq8", "Tt4Tt4Tt4", "Ab3dEf9hIj", "Xy7Xy7Xy7", "Rr6Rr6Rr6", "Pw9Pw9Pw9"):
        assert secret not in "".join(out)


def test_prose_rules_go_by_word_where_a_character_folds_to_ascii() -> None:
    # lower() makes K KELVIN SIGN a k, so "to\u212aen should be …" is a prose match wherever the
    # word "token" occurs in the text; the narrower gates (ASCII) cannot see it and give way.
    texts = [
        "to\u212aen should be Pw9Pw9Pw9x, and the token is in the config",
        "the pa\u017f\u017fword is Zq8Zq8Zq8Zq8 İ and a password is asked",
        "tokens: 12 used, token budget 4000, TOKEN: Ab3dEf9hIj2kLm",
        "the token counts and tokens to generate",
    ]
    out = _by_both_engines(texts)
    assert "Pw9Pw9Pw9x" not in out[0] and "Zq8Zq8Zq8Zq8" not in out[1] and "Ab3dEf9hIj2kLm" not in out[2]
    assert out[3] == texts[3]


def test_tokens_alone_on_lines_around_earlier_redactions_are_found() -> None:
    token = "Qm7Xv2Lp9Rt4Wz8Ks3Nd6Hb1"
    texts = [
        f"output:\n{token}\nmore\n  '{token}',\n",
        f"export GITHUB_TOKEN={P.GHP}\n{token}\n",
        f"[REDACTED:custom] first\n{token}\n",
        f"{token}",
    ]
    for text in texts:
        for r in (Redactor(), Redactor(engine="python")):
            assert token not in r.text(text) and "[REDACTED:high_entropy_token]" in r.text(text)


def test_a_redactor_shared_by_threads_redacts_in_each() -> None:
    r = Redactor()
    text = f"export GITHUB_TOKEN={P.GHP}\n" * 500
    results: list[bool] = []

    def work() -> None:
        results.extend(P.GHP not in r.text(text) for _ in range(20))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 80
