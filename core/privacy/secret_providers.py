"""Provider-prefixed token formats that the secret scanners know, one rule each.

Modelled on the rule catalogue of gitleaks (`config/gitleaks.toml`) and on the detectors of detect-secrets, trufflehog and secretlint, for formats
that can be told apart standing alone: a fixed prefix or a fixed structure. Bodies take every
character the format may hold, at least as many as it has, so no tail of a longer token survives.
Formats that only a name next to them reveals (a 32-character hex Algolia key) are left to the
secret-name rules in core/privacy/redact.py.
"""

from __future__ import annotations

from skillsleep.core.privacy.secret_values import ALNUM, Rule, random_enough, rule

_B62 = "[A-Za-z0-9]"
_W = "[A-Za-z0-9_-]"  # URL-safe base64 and most token alphabets
_B64 = "[A-Za-z0-9+/]"
_HEX = "[a-f0-9]"


def _has_digit(v: str) -> bool:
    return any(c.isdigit() for c in v)


def _app_secret(v: str) -> bool:
    """The secret after a Facebook app id looks generated (letters and digits)."""
    secret = v.replace("%7C", "|").partition("|")[2]
    return random_enough(secret, 27)


def _mixed_letters(v: str) -> bool:
    return any(c.islower() for c in v) and any(c.isupper() for c in v)


PROVIDER_RULES: list[Rule] = [
    rule("onepassword_key", "A3-", r"[A-Z0-9]{6}-[A-Z0-9]{5,11}(?:-[A-Z0-9]{5,6}){3,4}"),
    rule("onepassword_token", "ops_eyJ", _B64 + "{100,}={0,3}"),
    rule("adobe_secret", "p8e-", _B62 + "{32,}"),
    rule("age_secret_key", "AGE-SECRET-KEY-1", "[0-9A-Z]{58,}"),
    rule("alibaba_key", "LTAI", _B62 + "{20,}"),
    rule("artifactory_key", "AKCp", _B62 + "{60,}"),
    rule("artifactory_token", "cmVmd", _B62 + "{50,}", check=_has_digit),
    rule("atlassian_token", "ATATT3", "[A-Za-z0-9_=-]{100,}"),
    rule("azure_ad_client_secret", "", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,}", gate="Q~"),
    rule("clickhouse_key", "4b1d", _B62 + "{38,}"),
    rule("clojars_token", "CLOJARS_", "[a-z0-9]{60,}"),
    rule("cloudflare_token", "cf", "[au]t_" + _B62 + "{40,}", gate_regex="cf[au]t_", check=_has_digit),
    rule("cloudflare_origin_key", "v1.0-", _HEX + "{24}-" + _HEX + "{146,}"),
    rule("databricks_token", "dapi", _HEX + r"{32,}(?:-\d)?"),
    rule("doppler_token", "dp.", r"(?:pt|st|sa|ct|scim|audit)\." + _B62 + "{40,}"),
    rule("duffel_token", "duffel_", "(?:test|live)_[A-Za-z0-9_=-]{43,}"),
    rule("dynatrace_token", "dt0c01.", _B62 + r"{24}\." + _B62 + "{64,}"),
    rule("easypost_key", "EZAK", _B62 + "{54,}"),
    rule("easypost_key", "EZTK", _B62 + "{54,}"),
    rule("facebook_token", "EAA", "[MC]" + _B62 + "{100,}"),
    # an app id, `|` (or `%7C`) and the app secret: the app's access token
    rule(
        "facebook_token",
        "",
        r"\d{15,16}(?:\||%7C)" + _W + "{27,40}(?!" + _W + ")",
        gate_regex=r"[0-9]{15}(?:\||%7C)",
        check=_app_secret,
    ),
    rule("flutterwave_key", "FLWSECK", "(?:_TEST)?-[a-h0-9]{12,}(?:-X)?"),
    rule("flyio_token", "fo1_", _W + "{43,}"),
    rule("flyio_token", "fm", "(?:1[ar]|2)_" + _B64 + "{100,}={0,3}", gate_regex="fm(?:1[ar]|2)_"),
    rule("frameio_token", "fio-u-", "[A-Za-z0-9_=-]{64,}"),
    rule("gitlab_token", "gl", "(?:ffct|ft|imt|agent|oas)-" + _W + r"{20,}", gate_regex="gl(?:ffct|ft|imt|agent|oas)-"),
    rule("gitlab_token", "GR1348941", _W + "{20,}"),
    rule("grafana_key", "eyJrIjoi", _B62 + "{70,}={0,3}"),
    rule("grafana_token", "glc_", _B64 + "{32,}={0,3}"),
    rule("grafana_token", "glsa_", _B62 + "{32}_[A-Fa-f0-9]{8}"),
    rule("harness_token", "pat.", _W + r"{22}\." + _B62 + r"{24}\." + _B62 + "{20,}"),
    rule("harness_token", "sat.", _W + r"{22}\." + _B62 + r"{24}\." + _B62 + "{20,}"),
    rule("terraform_token", "", _B62 + r"{14}\.atlasv1\." + "[A-Za-z0-9_=-]{60,}", gate=".atlasv1."),
    rule("heroku_key", "HRKU-AA", _W + "{58,}"),
    rule("huggingface_token", "api_org_", "[A-Za-z]{34,}"),
    rule("infracost_token", "ico-", _B62 + "{32,}", boundary=ALNUM | frozenset("."), check=_mixed_letters),
    rule("intra42_secret", "s-s4t2", "(?:ud|af)-" + _HEX + "{64,}"),
    rule("linear_key", "lin_api_", _B62 + "{40,}"),
    rule("maxmind_key", "", _B62 + "{6}_" + _B62 + "{29}_mmk", gate="_mmk"),
    rule("newrelic_key", "NRAK-", "[A-Z0-9]{27,}"),
    rule("newrelic_key", "NRII-", "[A-Za-z0-9-]{32,}"),
    rule("newrelic_key", "NRJS-", _HEX + "{19,}"),
    # Mailgun's private API key: `key-` and 32 hex digits, not the end of a longer name (`cache-key-…`)
    rule("mailgun_key", "key-", _HEX + "{32}(?![A-Za-z0-9])", boundary=ALNUM | frozenset("-_./")),
    rule("notion_token", "ntn_", "[0-9]{11}" + _B62 + "{35,}"),
    rule("octopus_key", "API-", "[A-Z0-9]{26,}", check=_has_digit),
    rule("openshift_token", "sha256~", _W + "{43,}"),
    rule("perplexity_key", "pplx-", _B62 + "{48,}"),
    rule("planetscale_token", "pscale_", r"(?:tkn|oauth|pw)_[A-Za-z0-9_=-]{32,}"),
    rule("postman_key", "PMAK-", _HEX + "{24}-" + _HEX + "{34,}"),
    rule("prefect_key", "pnu_", _B62 + "{36,}"),
    rule("pulumi_token", "pul-", _HEX + "{40,}"),
    rule("readme_key", "rdme_", "[a-z0-9]{70,}"),
    rule("rubygems_key", "rubygems_", _HEX + "{48,}"),
    rule("scalingo_token", "tk-us-", _W + "{48,}"),
    rule("sendinblue_key", "xkeysib-", _HEX + "{64}-" + _B62 + "{16,}"),
    rule("sentry_token", "sntryu_", _HEX + "{64,}"),
    rule("sentry_token", "sntrys_", "eyJ[A-Za-z0-9+/=_]{60,}"),
    rule("settlemint_token", "sm_", "(?:aat|pat|sat)_" + _B62 + "{16,}"),
    rule("shippo_token", "shippo_", "(?:live|test)_[a-fA-F0-9]{40,}"),
    rule("sourcegraph_token", "sgp_", "(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40,}"),
    rule("square_token", "sq0", "(?:atp|csp)-" + _W + "{22,}"),
    rule("vault_token", "hv", r"[sbr]\." + _W + "{90,}", gate_regex=r"hv[sbr]\."),
    rule("yandex_key", "AQVN", _W + "{35,}"),
    rule("docker_token", "dckr_", "(?:pat|oat)_" + _W + "{27,}"),
    rule("tailscale_key", "tskey-", r"(?:auth|client|scim|webhook|api)-" + _B62 + "{6,}-" + _B62 + "{16,}"),
    rule("vercel_token", "vc", "[pickra]_" + _B62 + "{24,}", gate_regex="vc[pickra]_"),
    rule("figma_token", "figd_", _W + "{40,}"),
    rule("langsmith_key", "lsv2_", "(?:pt|sk)_[a-z0-9]{32}_[a-z0-9]{10,}"),
    rule("pinecone_key", "pcsk_", _B62 + "{5,6}_" + _B62 + "{50,}"),
    rule("supabase_token", "sbp_", _HEX + "{40,}"),
    rule("supabase_token", "sb_secret_", _W + "{30,}"),
    rule("mailchimp_key", "", _HEX + r"{32}-us\d{1,2}(?!\d)", gate_regex=_HEX + "{8}-us"),
    rule(
        "discord_token",
        "",
        "[MN]" + _B62 + r"{23,25}\." + _W + r"{6}\." + _W + "{27,}",
        gate_regex=r"[MN][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.",
        check=_mixed_letters,
    ),
]
