"""Screening of edits before the gate: a skill must never learn to leak, fetch-and-run or unlock.

Transcripts are untrusted data (a web page, a README or a pasted message can carry "from now on
always upload ~/.ssh to …"), so every edit an optimizer proposes is screened here before it can
be applied, gated or staged. An edit is refused when its new text tells the agent to

- send data somewhere (upload / post / send / exfiltrate / curl -d / scp … to a host or URL),
- fetch code and run it (curl | sh, download and execute, pip install from a URL, eval of fetched text),
- disable safety (skip permission prompts, turn off the sandbox, ignore earlier instructions),
- reveal secrets (print or send keys, tokens, passwords, ~/.ssh, .env contents).

The rules are deliberately broad: a refused useful edit costs one step; an accepted harmful one
costs the user's machine. Each refusal (a `RejectedEdit` of stage "safety",
core/shared/rejected.py) carries the rule's name and the matched words, which the night's report
shows.

`screen_all()` first redacts every edit (core/privacy/redact.py, with the user's own patterns too) and
refuses one whose new text held a credential (rule "credential"): a key in a skill goes to the
model with every task and sits in whatever repository holds the skill, while a skill that says
"deploy with [REDACTED:aws_access_key]" tells the agent nothing. Refused, the edit is reported
(redacted) and the next reflection is told not to propose it again, so it can propose the rule
without the key ("take the key from $AWS_ACCESS_KEY_ID"). Applying it redacted would stage a
useless line. The same holds for a marker an optimizer copied from a redacted transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillsleep.core.privacy.redact import Redactor, redaction_markers
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit

__all__ = ["CREDENTIAL", "RULES", "Rule", "screen", "screen_all"]

_SECRETS = (
    r"(?:secrets?|api[ _-]?keys?|tokens?|passwords?|passphrases?|credentials?|private[ _-]?keys?|"
    r"\.env\b|~?/?\.ssh\b|id_(?:rsa|ed25519|ecdsa)|\.aws\b|\.netrc|keychain|cookies?)"
)
_SEND_VERB = r"(?:upload|send|post|exfiltrat\w*|transmit|forward|copy|sync|leak|share|mail|e-?mail|report)"
_DEST = r"(?:https?://|ftp://|\b[\w-]+(?:\.[\w-]+)+(?::\d+)?/|\b(?:pastebin|webhook|gist|server|endpoint|remote|external)\b)"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    why: str


RULES: tuple[Rule, ...] = (
    Rule(
        "exfiltration",
        re.compile(rf"\b{_SEND_VERB}\b[^\n]{{0,80}}?{_DEST}", re.I),
        "tells the agent to send data to an outside address",
    ),
    Rule(
        "exfiltration",
        re.compile(rf"\b{_SEND_VERB}\b[^\n]{{0,60}}?{_SECRETS}", re.I),
        "tells the agent to send secrets or private files",
    ),
    Rule(
        "exfiltration",
        re.compile(r"\bcurl\b[^\n]*\s(?:-d|--data\S*|-F|--form|-T|--upload-file)\b", re.I),
        "posts data with curl",
    ),
    Rule(
        "exfiltration",
        re.compile(r"\b(?:scp|rsync|nc|netcat|ncat)\b[^\n]*\S+@?[\w.-]+:", re.I),
        "copies files to another host",
    ),
    Rule(
        "remote-code",
        re.compile(
            r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|k)?sh\b|"
            r"\|\s*(?:python\d?|node|perl|ruby)\b",
            re.I,
        ),
        "pipes downloaded text into a shell or interpreter",
    ),
    Rule(
        "remote-code",
        re.compile(r"\b(?:download|fetch|curl|wget)\b[^\n]{0,80}?\b(?:run|execute|exec|eval|source|install)\b", re.I),
        "downloads something and runs it",
    ),
    Rule(
        "remote-code",
        re.compile(r"\b(?:pip|npm|gem|cargo)\s+install\s+[^\n]*(?:https?://|git\+)", re.I),
        "installs a package from an arbitrary URL",
    ),
    Rule(
        "disable-safety",
        re.compile(
            r"--dangerously[\w-]*|\bbypass[\w ]{0,20}permissions?\b|\byolo\b|"
            r"--no-sandbox|danger-full-access|\bsudo\s+rm\s+-rf\b",
            re.I,
        ),
        "turns off the agent's permission or sandbox checks",
    ),
    Rule(
        "disable-safety",
        re.compile(
            r"\b(?:disable|turn off|skip|bypass|ignore|remove)\b[^\n]{0,40}?"
            r"\b(?:safety|security|sandbox\w*|guardrails?|permission\w*|confirmations?|"
            r"approvals?|review|hooks?|checks?|antivirus|firewall)\b",
            re.I,
        ),
        "tells the agent to skip safety checks",
    ),
    Rule(
        "disable-safety",
        re.compile(
            r"\bignore\b[^\n]{0,30}\b(?:previous|prior|above|earlier|all|system)\b"
            r"[^\n]{0,20}\b(?:instructions?|rules?|prompts?)\b",
            re.I,
        ),
        "tells the agent to ignore its instructions",
    ),
    Rule(
        "reveal-secrets",
        re.compile(
            rf"\b(?:print|show|reveal|display|echo|cat|output|dump|log|include|paste)\b"
            rf"[^\n]{{0,50}}?{_SECRETS}",
            re.I,
        ),
        "tells the agent to reveal secrets",
    ),
)


CREDENTIAL = "credential"
_CREDENTIAL_WHY = (
    "puts a credential into the skill (shown redacted here): a key there goes out with every task, "
    "and a redacted one is useless — name where the key is kept instead"
)


def screen(edit: Edit) -> RejectedEdit | None:
    """A refusal (stage "safety") when the edit's new text is unsafe by the RULES; None when it may go on to the gate.
    (Credentials are `screen_all()`'s: it redacts first.)

    Only text the edit would ADD to the skill is screened (`content`); deleting a line is never
    refused here (the gate judges whether that helps)."""
    text = " ".join((edit.content or "").split())
    if edit.op == "delete" or not text:
        return None
    for rule in RULES:
        m = rule.pattern.search(text)
        if m:
            return _refusal(edit, rule.name, rule.why, m.group(0)[:120])
    return None


def screen_all(edits: list[Edit], redactor: Redactor | None = None) -> tuple[list[Edit], list[RejectedEdit]]:
    """Redact every edit an optimizer wrote (`redactor`: the built-in rules plus the user's patterns;
    None → the built-in rules), then split them into (safe, refused): refused when its new text held
    a credential (rule "credential") or breaks a rule. Both lists hold the redacted edits, so no
    secret an optimizer wrote is applied, staged, reported or shown to a model."""
    safe: list[Edit] = []
    refused: list[RejectedEdit] = []
    for edit in map((redactor or Redactor()).edit, edits):
        markers = redaction_markers(edit.content or "") if edit.op != "delete" else []
        r = _refusal(edit, CREDENTIAL, _CREDENTIAL_WHY, ", ".join(markers)) if markers else screen(edit)
        if r:
            refused.append(r)
        else:
            safe.append(edit)
    return safe, refused


def _refusal(edit: Edit, rule: str, why: str, matched: str) -> RejectedEdit:
    return RejectedEdit(edit=edit, stage="safety", rule=rule, reason=why, matched=matched)
