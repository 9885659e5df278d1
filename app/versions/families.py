"""Which documents are versions of one another, and which version is in force: pure functions.

Two documents are one **family** when their texts are near-identical (MinHash over character
shingles estimates a Jaccard similarity of at least :data:`NEAR`), or when their file names differ
only by a date, a version mark (``第2版``, ``v2``, ``2版``, ``ver.3``), 改定/改訂/新/最新版, 旧/old,
案/draft (:func:`name_key`) or their titles are the same, and their texts are still alike (at least
:data:`RELATED`: two unrelated files named alike stay apart).

In a family the **current** version is, among the finals outside archive folders (``旧/``, ``old/``,
``archive/``, ``過去/``), the latest by effective date (app.versions.dates), then by version mark; when
some member's date is only its file's modification time, the version mark decides first. A ``案`` or
draft is current only when the family has no final; a file in an archive folder only when every
member is in one. Members equal to the current on every key are current too (a PDF beside its Word
original). Every other member is ``superseded_by`` the current one. ``versions.toml``
(app.versions.overrides) fixes dates, families and the current version.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from app.versions.dates import effective_date
from app.versions.overrides import Overrides

__all__ = [
    "NEAR",
    "RELATED",
    "NUM_PERM",
    "VersionDoc",
    "Version",
    "assign_versions",
    "group_documents",
    "is_archived",
    "is_draft",
    "name_key",
    "signature",
    "similarity",
    "version_mark",
]

NUM_PERM = 128  # MinHash permutations: a similarity estimate within about ±0.09 (1/√128)
SCHEME = "affine32"  # datasketch 2.0's default, named: stored signatures are read back with it (values < 2**32)
SHINGLE = 5  # characters per shingle (Japanese: a word or two)
NEAR = 0.8  # near-identical texts: one document's versions whatever their names
RELATED = 0.3  # alike enough, when names or titles say they are versions
ARCHIVE_FOLDERS = frozenset({"旧", "old", "archive", "archives", "過去", "過去版", "旧版", "attic"})
STATUS_CURRENT, STATUS_PAST, STATUS_DRAFT, STATUS_ARCHIVED = "current", "past", "draft", "archived"

_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
# 案 as a draft mark: alone in brackets, after a separator, or ending the name, but not the end of a
# word that is no draft (提案, 答案, 議案, 法案, 図案, 方案, 考案, 懸案, 教案, 代案, 新案, 創案, 名案, 翻案)
_DRAFT = re.compile(
    r"(?:[(（【\[]\s*(?:改定|改訂)?(?:素?案|原案|ドラフト|draft)\s*[)）】\]])"
    r"|(?<![提答議法図方考懸教代新創名翻思腹])案(?:$|[\s_\-])"
    r"|(?:^|[\s_\-])(?:draft|ドラフト|原案|素案)(?:$|[\s_\-\d])",
    re.IGNORECASE,
)
_VERSION_MARKS = re.compile(
    r"第\s*(?P<nth>\d+)\s*版|(?<![A-Za-z])(?:v|ver\.?|version\s*)(?P<v>\d+(?:\.\d+)*)|(?P<ban>\d+)\s*版(?!権)",
    re.IGNORECASE,
)
_REVISED = re.compile(r"改定版|改訂版|最新版|新版|改定|改訂|revised|updated|new", re.IGNORECASE)
_DATES_IN_NAME = re.compile(
    r"(?:19|20)\d{2}[-_.]?\d{1,2}[-_.]?\d{1,2}|(?:19|20)\d{2}(?:年度?)?(?:\d{1,2}月)?(?:\d{1,2}日)?"
    r"|(?:令和|平成|昭和|R|H)\s*(?:元|\d{1,2})(?:年度?|[./]\d{1,2}[./]\d{1,2})(?:\d{1,2}月)?(?:\d{1,2}日)?"
)
_BOUND_L, _BOUND_R = r"(?:^|(?<=[\s_\-.()（）【】\[\]]))", r"(?=$|[\s_\-.()（）【】\[\]])"
# removed wherever they stand / only as words of their own (新規, ご案内 and 改定履歴 keep theirs) / 案 ending the name
_NAME_NOISE = re.compile(
    r"改定版|改訂版|最新版|確定版|最終版|正式版|新版|旧版"
    + "|"
    + _BOUND_L
    + r"(?:新|旧|old|new|final|revised|updated|copy|コピー|改定|改訂|draft|ドラフト|原案|素案|案)"
    + _BOUND_R
    + r"|(?<![提答議法図方考懸教代新創名翻思腹])案$",
    re.IGNORECASE,
)
_OLD_NAME = re.compile(_BOUND_L + r"(?:旧|旧版|old)" + _BOUND_R, re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_\-.,・()（）【】\[\]「」]+")


@dataclass(frozen=True)
class VersionDoc:
    """What the rules read of one document: its ID (the path under the data dir), the date its text
    states (app.versions.dates.stated_date), its title, its MinHash signature and its file's mtime."""

    doc_id: str
    text_date: date | None = None
    title: str = ""
    signature: tuple[int, ...] = ()
    mtime: float | None = None


@dataclass(frozen=True)
class Version:
    """One document's place: its ``family`` (the current version's ID; None alone), its ``effective``
    date and where it was read (``text``, ``name``, ``mtime``, ``override``), its ``status``
    (``current``, ``past``, ``draft``, ``archived``; ``""`` alone) and the current version it is
    ``superseded_by`` (None when it is current or alone)."""

    doc_id: str
    family: str | None
    effective: date | None
    effective_from: str
    status: str
    superseded_by: str | None


def _file_name(doc_id: str) -> str:
    return unicodedata.normalize("NFKC", doc_id.rsplit("/", 1)[-1])


def _stem(doc_id: str) -> str:
    return _EXTENSION.sub("", _file_name(doc_id))


def name_key(doc_id: str) -> str:
    """The file name without folders, extension, dates, version marks, 改定/改訂/新/旧, 案/draft and
    separators, case-folded: ``規程/旧/就業規則_2023(案).docx`` and ``就業規則_v2.pdf`` are ``就業規則``."""
    stem = _stem(doc_id)
    stem = _VERSION_MARKS.sub(" ", stem)
    stem = _DATES_IN_NAME.sub(" ", stem)
    stem = _NAME_NOISE.sub(" ", stem)
    return _SEPARATORS.sub("", stem).casefold()


def is_archived(doc_id: str) -> bool:
    """Whether ``doc_id`` is marked as a past version: a folder named 旧, old, archive, 過去 …
    (``規程/旧/就業規則.docx``), or 旧/old as a word of the file name (``【旧】就業規則.docx``, ``manual_old.pdf``)."""
    folders = unicodedata.normalize("NFKC", doc_id).split("/")[:-1]
    return any(folder.strip().casefold() in ARCHIVE_FOLDERS for folder in folders) or bool(
        _OLD_NAME.search(_stem(doc_id))
    )


def is_draft(doc_id: str) -> bool:
    """Whether the file name marks a draft: ``就業規則（案）.docx``, ``就業規則案.docx``, ``規程_draft.md``
    (but not ``新サービス提案.pptx``)."""
    return bool(_DRAFT.search(_stem(doc_id)))


def version_mark(doc_id: str) -> tuple[tuple[int, ...], bool]:
    """The version the file name states, ``(numbers, revised)``: ``第3版`` → ``((3,), False)``,
    ``v2.1`` → ``((2, 1), False)``, ``改定版`` → ``((), True)``, none → ``((), False)``."""
    stem = _stem(doc_id)
    numbers: tuple[int, ...] = ()
    for m in _VERSION_MARKS.finditer(stem):
        value = m["nth"] or m["v"] or m["ban"]
        numbers = max(numbers, tuple(int(part) for part in value.split(".")))
    return numbers, bool(_REVISED.search(_DATES_IN_NAME.sub(" ", stem)))


def _shingles(text: str) -> set[bytes]:
    flat = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text or ""))
    if len(flat) <= SHINGLE:
        return {flat.encode()} if flat else set()
    return {flat[i : i + SHINGLE].encode() for i in range(len(flat) - SHINGLE + 1)}


def signature(text: str) -> tuple[int, ...]:
    """The MinHash signature (:data:`NUM_PERM` values) of ``text``'s character shingles (after NFKC,
    without whitespace); ``()`` for an empty text."""
    from datasketch import MinHash

    shingles = _shingles(text)
    if not shingles:
        return ()
    minhash = MinHash(num_perm=NUM_PERM, seed=1, scheme=SCHEME)
    minhash.update_batch(list(shingles))
    return tuple(int(v) for v in minhash.hashvalues)


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """The Jaccard similarity two signatures estimate (0.0 when either is empty)."""
    if not a or not b or len(a) != len(b):
        return 0.0
    return sum(x == y for x, y in zip(a, b)) / len(a)


class _Groups:
    """Union-find over document IDs."""

    def __init__(self, ids: Iterable[str]):
        self.parent = {i: i for i in ids}

    def find(self, i: str) -> str:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for i in sorted(self.parent):
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values())


@functools.cache
def _lsh_bands() -> tuple[int, int]:
    """The LSH bands and rows for :data:`NEAR` over :data:`NUM_PERM` permutations, worked out once per process
    (datasketch integrates the false positive and negative curves for them: ~16 ms on each sync otherwise)."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=NEAR, num_perm=NUM_PERM)
    return lsh.b, lsh.r


def _near_pairs(docs: Sequence[VersionDoc]) -> set[tuple[str, str]]:
    """Pairs whose signatures are near-identical, found through MinHash LSH (not every pair compared)."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(num_perm=NUM_PERM, params=_lsh_bands())
    pairs: set[tuple[str, str]] = set()
    by_id = {d.doc_id: d for d in docs if len(d.signature) == NUM_PERM}
    for doc_id, doc in by_id.items():
        minhash = MinHash(num_perm=NUM_PERM, seed=1, hashvalues=list(doc.signature), scheme=SCHEME)
        for other in lsh.query(minhash):
            if similarity(doc.signature, by_id[other].signature) >= NEAR:
                pairs.add((min(doc_id, other), max(doc_id, other)))
        lsh.insert(doc_id, minhash)
    return pairs


def group_documents(docs: Sequence[VersionDoc], overrides: Overrides | None = None) -> list[list[str]]:
    """The families of ``docs`` (lists of IDs, sorted; documents alone included as one-element lists)."""
    overrides = overrides or Overrides()
    free = [d for d in docs if d.doc_id not in overrides.separate]
    groups = _Groups(d.doc_id for d in docs)
    for a, b in _near_pairs(free):
        groups.union(a, b)
    buckets: dict[tuple[str, str], list[VersionDoc]] = {}
    for doc in free:
        if key := name_key(doc.doc_id):
            buckets.setdefault(("name", key), []).append(doc)
        if doc.title.strip():
            buckets.setdefault(("title", doc.title.strip().casefold()), []).append(doc)
    for members in buckets.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if similarity(a.signature, b.signature) >= RELATED:
                    groups.union(a.doc_id, b.doc_id)
    known = set(groups.parent)
    for family in overrides.families:
        listed = [doc_id for doc_id in family.documents if doc_id in known]
        for doc_id in listed[1:]:
            groups.union(listed[0], doc_id)
    return groups.groups()


def _effective(doc: VersionDoc, overrides: Overrides) -> tuple[date | None, str]:
    if doc.doc_id in overrides.effective:
        return overrides.effective[doc.doc_id], "override"
    if doc.text_date is not None:
        return doc.text_date, "text"
    return effective_date(None, doc.doc_id, doc.mtime)


def _order_key(doc_id: str, when: date | None, source: str, by_mark_first: bool) -> tuple:
    numbers, revised = version_mark(doc_id)
    day = when or date.min
    return (numbers, revised, day) if by_mark_first else (day, numbers, revised)


def assign_versions(docs: Sequence[VersionDoc], overrides: Overrides | None = None) -> dict[str, Version]:
    """Every document's :class:`Version` (family, effective date, status, superseded_by)."""
    overrides = overrides or Overrides()
    by_id = {d.doc_id: d for d in docs}
    dates = {d.doc_id: _effective(d, overrides) for d in docs}
    pinned = {doc_id for family in overrides.families for doc_id in family.current_ids()}
    out: dict[str, Version] = {}
    for members in group_documents(docs, overrides):
        if len(members) == 1:
            doc_id = members[0]
            when, source = dates[doc_id]
            status = STATUS_ARCHIVED if is_archived(doc_id) else ""
            out[doc_id] = Version(doc_id, None, when, source, status, None)
            continue
        out.update(_family(members, by_id, dates, pinned))
    return out


def _family(
    members: Sequence[str],
    by_id: Mapping[str, VersionDoc],
    dates: Mapping[str, tuple[date | None, str]],
    pinned: set[str],
) -> dict[str, Version]:
    """The versions of one family of two or more members."""
    chosen = [m for m in members if m in pinned]
    if not chosen:
        finals = [m for m in members if not is_archived(m) and not is_draft(m)]
        candidates = finals or [m for m in members if not is_archived(m)] or list(members)
        by_mark_first = any(dates[m][1] == "mtime" for m in members)
        keys = {m: _order_key(m, *dates[m], by_mark_first) for m in candidates}
        best = max(keys.values())
        chosen = [m for m in candidates if keys[m] == best]
    current = min(chosen)
    out = {}
    for doc_id in members:
        when, source = dates[doc_id]
        if doc_id in chosen:
            out[doc_id] = Version(doc_id, current, when, source, STATUS_CURRENT, None)
            continue
        status = STATUS_ARCHIVED if is_archived(doc_id) else STATUS_DRAFT if is_draft(doc_id) else STATUS_PAST
        out[doc_id] = Version(doc_id, current, when, source, status, current)
    return out
