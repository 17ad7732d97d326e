"""Grouping (mining, step 2): instances → lexical groups → paraphrases merged by the optimizer.

Distinct normalized requests (`similarity.normalize`), most frequent first, are compared pairwise:
pairs at or above GROUP_THRESHOLD are joined (union-find, so chains join too) into lexical groups,
and pairs at or above RELATED_THRESHOLD are kept as related (the clusters of `mine`). Only the
MAX_COMPARED most frequent distinct texts are compared pairwise (the rest group by identical
normalized text only). The optimizer is asked only about plausible merges: groups whose
representatives are `similarity.plausible` pairs (a looser likeness, or one request's words inside
the other's) form plausible sets, and when there are any, ONE call (`paraphrases`, role "mine")
sees the representatives of those groups (the MERGE_REQUESTS first; redacted, inside data fences)
and names groups that are paraphrases of one task. No plausible set, no call. A merge never
leaves its plausible set (a reply that joins unrelated requests keeps only the parts that may be
one task). A reply that cannot be read keeps the lexical groups; a group that names requests that
do not exist has those ignored; a group that lumps most of a plausible set of 4+ together is
ignored. Each is recorded as an `UnusableReply`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pydantic import ConfigDict, StrictInt

from skillsleep.core.mine.intents import Instance
from skillsleep.core.mine.similarity import (
    GROUP_THRESHOLD,
    PLACEHOLDERS,
    RELATED_THRESHOLD,
    feature_similarity,
    features,
    plausible,
)
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, render
from skillsleep.core.models.replies import Lenient, Reply, Unfit, item_numbers
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Message, UnusableReply

MAX_COMPARED = 2500  # distinct normalized texts compared pairwise (the most frequent ones)
MERGE_REQUESTS = 60  # lexical groups shown to the optimizer for the paraphrase merge
MERGE_CHARS = 400
REPLY_TOKENS = 1024


class UnionFind:
    """Disjoint sets of 0..n-1; the smaller index leads a set."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)  # the smaller index (the more frequent text) leads
        return True

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return [out[root] for root in sorted(out)]


def lexical(keys: list[str]) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Group distinct normalized texts (ordered most frequent first) → (groups, related pairs)."""
    feats = [features(k) for k in keys[:MAX_COMPARED]]
    # similarity <= 0.5 * word overlap + 0.5, and RELATED_THRESHOLD > 0.5: only pairs that share a
    # word can reach it, so the word postings give every candidate pair (an exact pruning).
    postings: dict[str, list[int]] = {}
    for i, (words, _) in enumerate(feats):
        for word in words:
            postings.setdefault(word, []).append(i)
    uf = UnionFind(len(keys))
    related: list[tuple[int, int]] = []
    for i, fi in enumerate(feats):
        candidates = {j for word in fi[0] for j in postings[word] if j > i}
        for j in sorted(candidates):
            s = feature_similarity(fi, feats[j])
            if s >= GROUP_THRESHOLD:
                uf.union(i, j)
            elif s >= RELATED_THRESHOLD:
                related.append((i, j))
    return uf.groups(), related


class Group:
    """Instances of one (lexical or merged) group, with its representative."""

    def __init__(self, instances: list[Instance]) -> None:
        self.instances = instances
        counts = Counter(i.key for i in instances)
        self.keys = counts
        self.key = min(counts, key=lambda k: (-counts[k], len(k), k))
        with_key = [i for i in instances if i.key == self.key]
        self.representative = max(with_key, key=lambda i: (i.when, i.session_id))

    @property
    def size(self) -> int:
        return len(self.instances)


class ParaphraseReply(Reply):
    """Groups of request numbers (from 1) that are one task."""

    model_config = ConfigDict(title="mine_merge")

    groups: list[Lenient[list[StrictInt]]]


def merge_messages(requests: list[tuple[str, int]]) -> list[Message]:
    """The paraphrase-merge prompt for (representative request, times asked) pairs, fenced as data."""
    parts = []
    for n, (text, size) in enumerate(requests, 1):
        times = "once" if size == 1 else f"{size} times"
        parts.append(f"Request {n} (asked {times}):\n" + data_block(f"REQUEST {n}", text, limit=MERGE_CHARS))
    user = render("mine_merge_user", count=len(requests), requests="\n\n".join(parts))
    return [Message(role="system", content=render("mine_merge_system")), Message(role="user", content=user)]


def plausible_sets(groups: list[Group]) -> list[list[int]]:
    """Sets of 2+ groups (indexes, in order) whose representatives are joined by `plausible` pairs:
    the only merges worth asking the optimizer about."""
    feats = [features(g.key) for g in groups[:MAX_COMPARED]]
    postings: dict[str, list[int]] = {}
    for i, (words, _) in enumerate(feats):
        for word in words - PLACEHOLDERS:  # a plausible pair shares a real word
            postings.setdefault(word, []).append(i)
    uf = UnionFind(len(feats))
    for i, fi in enumerate(feats):
        for j in sorted({j for word in fi[0] - PLACEHOLDERS for j in postings[word] if j > i}):
            if uf.find(i) != uf.find(j) and plausible(fi, feats[j]):
                uf.union(i, j)
    return [members for members in uf.groups() if len(members) >= 2]


@dataclass
class Merges:
    """What the paraphrase merge decided: index sets (into the groups) that are one task, the
    groups the optimizer was shown (0: no call), and what of its reply could not be used."""

    merges: list[list[int]] = field(default_factory=list)
    asked: int = 0
    problems: list[UnusableReply] = field(default_factory=list)


async def paraphrases(llm: LLM, groups: list[Group]) -> Merges:
    """Ask the optimizer (one call, only when some groups are `plausible_sets`) which of those
    groups are one task. A merge never leaves its plausible set; within a set of 4+ groups, one
    that joins most of them is ignored (a weak model lumps requests together)."""
    sets = plausible_sets(groups)
    shown = [i for members in sets for i in members][:MERGE_REQUESTS]
    result = Merges(asked=len(shown) if len(shown) >= 2 else 0)
    if not result.asked:
        return result
    set_of = {i: n for n, members in enumerate(sets) for i in members}
    set_size = Counter(set_of[i] for i in shown)
    messages = merge_messages([(groups[i].representative.prompt, groups[i].size) for i in shown])
    try:
        reply = await llm.ask_model("mine", messages, ParaphraseReply, max_tokens=REPLY_TOKENS)
    except ParseError as exc:
        result.problems.append(_problem(f"the optimizer's reply could not be read ({exc}); kept the lexical groups"))
        return result
    for n, item in enumerate(reply.groups, 1):
        if isinstance(item, Unfit):
            result.problems.append(_problem(f"group {n} is not a list of request numbers ({item.value!r}); ignored"))
            continue
        numbers = item_numbers(item, len(shown))
        if numbers.out_of_range:
            bad = sorted(set(numbers.out_of_range))
            result.problems.append(_problem(f"group {n} names requests that do not exist ({bad}); those ignored"))
        parts: dict[int, list[int]] = {}
        for position in sorted(numbers.indexes):
            parts.setdefault(set_of[shown[position]], []).append(shown[position])
        if len(parts) > 1:
            result.problems.append(
                _problem(f"group {n} joins requests too unlike to be one task; only those alike were joined")
            )
        for s, members in parts.items():
            result.merges += [members] if _believable(n, len(members), set_size[s], result.problems) else []
    return result


def _believable(n: int, joined: int, among: int, problems: list[UnusableReply]) -> bool:
    """Whether joining `joined` of `among` plausible requests is a real set of paraphrases."""
    if among >= 4 and joined > max(3, among // 2):
        problems.append(
            _problem(
                f"group {n} joins {joined} of {among} requests into one task, which no real set of paraphrases "
                "does; ignored (a weak optimizer model lumps requests together: use a stronger --optimizer-model)"
            )
        )
        return False
    return joined >= 2


def _problem(error: str) -> UnusableReply:
    return UnusableReply(role="mine", where="paraphrase merge", error=error)
