"""Grouping (mining, step 2): instances → lexical groups → paraphrases merged by the optimizer.

Distinct normalized requests (`similarity.normalize`), most frequent first, are compared pairwise:
pairs at or above GROUP_THRESHOLD are joined (union-find, so chains join too) into lexical groups,
and pairs at or above RELATED_THRESHOLD are kept as related (the clusters of `mine`). Only the
MAX_COMPARED most frequent distinct texts are compared pairwise (the rest group by identical
normalized text only). Then ONE optimizer call (`paraphrases`, role "mine") sees the
representatives of the MERGE_REQUESTS largest groups (redacted, inside data fences) and names
groups that are paraphrases of one task. A reply that cannot be read keeps the lexical groups; a
group that names requests that do not exist has those ignored; a group that lumps most of the
requests together is ignored. Each is recorded as an `UnusableReply`.
"""

from __future__ import annotations

from collections import Counter

from pydantic import ConfigDict, StrictInt

from skillsleep.core.errors import ParseError
from skillsleep.core.intents import Instance
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import data_block, render
from skillsleep.core.records import Message, UnusableReply
from skillsleep.core.replies import Lenient, Reply, Unfit, item_numbers
from skillsleep.core.similarity import GROUP_THRESHOLD, RELATED_THRESHOLD, feature_similarity, features

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


async def paraphrases(llm: LLM, groups: list[Group]) -> tuple[list[list[int]], list[UnusableReply]]:
    """Index sets (into `groups`) the optimizer says are one task, and what of its reply could not
    be used; no sets when the reply is unusable."""
    shown = groups[:MERGE_REQUESTS]
    messages = merge_messages([(g.representative.prompt, g.size) for g in shown])
    try:
        reply = await llm.ask_model("mine", messages, ParaphraseReply, max_tokens=REPLY_TOKENS)
    except ParseError as exc:
        return [], [_problem(f"the optimizer's reply could not be read ({exc}); kept the lexical groups")]
    merges: list[list[int]] = []
    problems: list[UnusableReply] = []
    for n, item in enumerate(reply.groups, 1):
        if isinstance(item, Unfit):
            problems.append(_problem(f"group {n} is not a list of request numbers ({item.value!r}); ignored"))
            continue
        numbers = item_numbers(item, len(shown))
        if numbers.out_of_range:
            bad = sorted(set(numbers.out_of_range))
            problems.append(_problem(f"group {n} names requests that do not exist ({bad}); those ignored"))
        members = sorted(numbers.indexes)
        if len(shown) >= 4 and len(members) > max(3, len(shown) // 2):
            problems.append(
                _problem(
                    f"group {n} joins {len(members)} of {len(shown)} requests into one task, which no real set of "
                    "paraphrases does; ignored (a weak optimizer model lumps requests together: use a stronger "
                    "--optimizer-model)"
                )
            )
            continue
        if len(members) >= 2:
            merges.append(members)
    return merges, problems


def _problem(error: str) -> UnusableReply:
    return UnusableReply(role="mine", where="paraphrase merge", error=error)
