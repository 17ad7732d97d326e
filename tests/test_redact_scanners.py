"""Redaction on the secret scanners' own test data (tests/fixtures/secrets/scanner_*.py, sources in
PROVENANCE.md): their false-positive samples must come out unchanged, their token shapes redacted,
with a name next to them or standing alone."""

from __future__ import annotations

import time

import pytest
from secret_corpus import load

from skillsleep.core.privacy.redact import Redactor

F = load("field")  # caught(): no 8-character piece of the secret survives
B = load("scanner_benign")
T = load("scanner_tokens")
BENIGN_ALTERED_MAX = 0.02
ANNOUNCED_MIN = 0.99
BARE_MIN = 0.95


def test_at_most_two_percent_of_the_scanners_benign_lines_are_altered() -> None:
    altered = {s: n for s in B.SAMPLES if (n := B.altered_lines(s, Redactor().text(s)))}
    assert sum(altered.values()) / B.LINES <= BENIGN_ALTERED_MAX, altered


def test_announced_secrets_are_kept_out() -> None:
    leaked = [text for _, secret, text in T.ANNOUNCED if not F.caught(secret, text, Redactor().text(text))]
    assert 1 - len(leaked) / len(T.ANNOUNCED) >= ANNOUNCED_MIN, leaked


def test_bare_provider_prefixed_tokens_are_caught() -> None:
    leaked = [text for _, secret, text in T.BARE if not F.caught(secret, text, Redactor().text(text))]
    assert 1 - len(leaked) / len(T.BARE) >= BARE_MIN, leaked


@pytest.mark.parametrize("kind", ["cloudflare_token", "newrelic_key", "mailgun_key", "facebook_token"])
def test_bare_tokens_once_missed_are_caught_in_every_context(kind: str) -> None:
    rows = [(secret, text) for k, secret, text in T.BARE if k == kind]
    assert rows and all(F.caught(secret, text, Redactor().text(text)) for secret, text in rows)


@pytest.mark.parametrize(
    "line",
    [
        "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
        "https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg",
        "PuttyPassword=0",
        "http://assets.r7.com/assets/media_box_tv_tres_colunas/video_box.ico-7a388b69018576d24b59331fd60aab0c.png",
        'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
        "IceSSL.KeyFile=s_rsa1024_priv.pem",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "curl -i -u 'test:test'",
    ],
)
def test_a_benign_line_the_issue_names_is_unchanged(line: str) -> None:
    assert Redactor().text(line) == line


@pytest.mark.parametrize("block", B.ARMOURED, ids=lambda b: b.split("-----")[1])
def test_lines_of_a_public_key_certificate_or_pgp_message_are_not_tokens(block: str) -> None:
    assert Redactor().text(block) == block


def test_a_token_alone_after_a_public_block_is_still_caught() -> None:
    token = T.r(40)
    text = f"{B.ARMOURED[2]}\n$ cat token.txt\n{token}\n"
    assert token not in Redactor().text(text)


def test_both_scan_engines_agree_on_the_scanner_corpus() -> None:
    texts = B.SAMPLES + [text for _, _, text in T.BARE + T.ANNOUNCED]
    assert [Redactor(engine="python").text(t) for t in texts] == [Redactor().text(t) for t in texts]


@pytest.mark.parametrize(
    "command",
    [
        "curl -k -X POST https://cache.example.com/rest/v2/hello \\\n  -H 'Content-type: text/plain' \\\n  -u dev:{S}",
        "curl --user kevin:'{S}' -iX PATCH -H 'Content-Type: application/json'",
        '$ curl https://api.example.com/oauth2/token \\\n  --user "client":"{S}" --data grant_type=code',
    ],
)
def test_a_curl_password_on_a_continued_line_or_quoted_alone_is_caught(command: str) -> None:
    password = T.r(16)
    text = command.format(S=password)
    assert password not in Redactor().text(text)


def test_a_curl_password_on_a_line_no_backslash_continues_is_left_to_the_other_rules() -> None:
    text = "curl https://example.com\nusage: -u user:Abc12345"
    assert Redactor().text(text) == text


def test_a_private_key_body_holding_a_run_of_x_is_still_redacted() -> None:
    body = "MIIEowIBAAKCAQEAxxxxxx" + T.r(64) + "\n" + T.r(64)
    text = f"-----BEGIN RSA {'PRIVATE'} KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    assert "MIIEowIBAAKCAQEA" not in Redactor().text(text)


def test_aws_documented_example_keys_are_placeholders_but_a_key_holding_example_is_not() -> None:
    doc = "aws_access_key: AKIAIOSFODNN7EXAMPLE"
    assert Redactor().text(doc) == doc
    key = "AK" + "IAEXAMPLEQ2R7T4W5Z"
    assert key not in Redactor().text(f"id {key} here")


def test_a_cut_off_public_block_ends_at_its_first_line_of_other_text() -> None:
    token = T.r(40)
    cut = "\n".join(B.ARMOURED[3].splitlines()[:4])  # no END line
    out = Redactor().text(f"{cut}\n$ cat token.txt\n{token}\n")
    assert token not in out and cut in out


def test_a_long_run_of_continued_curl_lines_redacts_in_linear_time() -> None:
    text = "curl -X POST https://example.com \\\n" * 20000
    start = time.process_time()
    assert Redactor().text(text) == text
    assert time.process_time() - start < 5  # 0.1 s; a minute when every curl looked through all the lines after it
