"""Entity extraction from a chunk: noun phrases with a Japanese morphological analyzer (no LLM), or
JSON from the LLM (GRAPH_EXTRACTOR=llm).

The fast extractor (the default; README "Graph search" has the measurement behind the analyzer):

1. the text is NFKC-normalized; runs of Latin letters and digits (``apt-get``, ``debian/rules``,
   ``E3010``, ``ISO/IEC``) are kept whole, and Title-case words one space apart are joined
   (``Debian Policy Manual``); plain quantities (``2GiB``, ``3.0``) are not entities; a run
   written against Japanese nouns joins their phrase and is an entity of its own as well
   (``CSVファイル`` and ``CSV``);
2. SudachiPy (split mode C, the dictionary ``sudachidict_core``) cuts the rest into words with
   their parts of speech; consecutive nouns (common, proper, サ変), with prefixes and noun
   suffixes between them, form one phrase (``パッケージ管理システム``, ``新メンテナー``);
3. formal and deictic nouns (こと, もの, 場合, 以下 …), one-character phrases, numbers with
   counters (``17年間``), adjectival phrases (``定期的``), a lone サ変 noun used as a verb
   (``署名``\\ できます) and a lone common noun of one or two kanji (``利用``, ``契約``: too
   general to name a thing; ``二要素認証`` stays) are dropped.

A chunk's sentences (split after 。！？ and at line breaks; a CSV row is one sentence, its
``column:`` labels removed) give the mentions (entity key → name, kind, count, first sentence)
and the pairs of entities named in one sentence (the relationships, weighted by count).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Any

from app.graphrag.points import MapParseError, parse_json_object
from app.graphrag.stopwords import BREAK_SUFFIXES, ENGLISH_STOP, STOP_LEAD, STOP_PHRASES, STOP_TRAIL, SURU
from app.llm import generate, get_llm, with_options
from app.models.resources import cached
from app.storage.graphrag_types import ChunkGraph, Mention
from app.text.keywords import normalize_text, sentences

EXTRACTOR_VERSION = "1"  # bump when extraction changes: stored links are extracted again
SENTENCE_CHARS = 200  # a mention keeps at most this much of its first sentence
MAX_PHRASE_CHARS = 40
ANALYZER_CHARS = 8000  # SudachiPy takes at most 49,149 bytes per call: longer units are cut

LATIN_RE = re.compile(r"(?:~?/)?\.?[A-Za-z0-9_](?:[A-Za-z0-9_+]|[-./:~@](?=[A-Za-z0-9_*])|\*)*")
QUANTITY_RE = re.compile(r"^\d[\d.,]*[A-Za-z%]{0,4}$")  # 2GiB, 100MB, 3.0, 64bit
HAS_ALPHA = re.compile(r"[A-Za-z]")
WORDCHAR = re.compile(r"[A-Za-z0-9\u3040-\u30ff\u4e00-\u9fff]")
NUMERIC_RE = re.compile(r"^[\d.,一二三四五六七八九十百千万億]+$")
KANJI_ONLY = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff々]+$")
CSV_LABEL = re.compile(r"^[^:\n]{1,60}:", re.MULTILINE)
CSV_SOURCE = re.compile(r"\.csv:r\d+$")


def units_of(text: str, metadata: dict) -> list[str]:
    """The sentences of a chunk; a CSV row (source ``file.csv:rN``) is one, without its column labels."""
    if CSV_SOURCE.search(str(metadata.get("source", ""))):
        row = " ".join(line.strip() for line in CSV_LABEL.sub("", text).splitlines() if line.strip())
        return [row] if row else []
    return sentences(text)


def latin_spans(text: str) -> list[list[int]]:
    """[start, end) of each Latin run holding a letter; Title-case words one space apart joined."""
    spans = [[m.start(), m.end()] for m in LATIN_RE.finditer(text) if HAS_ALPHA.search(m.group())]
    merged: list[list[int]] = []
    for span in spans:
        if merged:
            last = merged[-1]
            left, right = text[last[0] : last[1]], text[span[0] : span[1]]
            if (
                span[0] == last[1] + 1
                and text[last[1]] == " "
                and right[:1].isupper()
                and left.split(" ")[-1][:1].isupper()
                and "/" not in left + right
                and "." not in left + right
            ):
                last[1] = span[1]
                continue
        merged.append(span)
    return merged


def word_class(pos: Sequence[str]) -> str:
    """A word's role in a phrase from its UniDic-style part of speech (SudachiPy's):
    N noun, W/WA adjectival/adverbial noun, C counter-like noun, NUM number, P prefix,
    S noun suffix, SP space, B anything that ends a phrase."""
    pos1, pos2, pos3 = (list(pos) + ["", "", ""])[:3]
    if pos1 == "形状詞" and pos2 == "一般":
        return "P"  # シンボリック|リンク: joins only when a noun follows
    if pos1 == "名詞":
        if pos2 == "数詞":
            return "NUM"
        if pos2 in ("普通名詞", "固有名詞"):
            return {"副詞可能": "WA", "形状詞可能": "W", "助数詞可能": "C"}.get(pos3, "N")
        return "B"
    if pos1 == "接頭辞":
        return "P"
    if pos1 == "接尾辞" and pos2 in ("名詞的", "形状詞的"):
        return "S"
    if pos1 == "空白":
        return "SP"
    return "B"


def word_flag(pos: Sequence[str], lemma: str) -> str:
    """``sahen`` for a サ変 noun, ``suru`` for する/できる (which make the noun before them a verb)."""
    pos1, pos3 = pos[0], (list(pos) + ["", "", ""])[2]
    if pos1 == "名詞" and pos3 in ("サ変可能", "サ変形状詞可能"):
        return "sahen"
    return "suru" if pos1 == "動詞" and lemma in SURU else ""


TERM_MARK = re.compile(r"[A-Z0-9\-./_~:+]")


def english_prose(text: str) -> bool:
    """True for a sentence written in English (most letters Latin, several words): there a Latin run
    is an entity only when it looks like a name or a term (``APT``, ``dpkg-buildpackage``), not a
    plain lower-case word (``package``, ``option``)."""
    letters = [ch for ch in text if ch.isalpha()]
    return len(text.split()) >= 5 and sum(ch.isascii() for ch in letters) >= 0.7 * max(1, len(letters))


def keep_latin(text: str, prose: bool = False) -> bool:
    """A Latin run is an entity unless it is one character, a plain quantity or an English function
    word; in English prose, only names and terms (see :func:`english_prose`)."""
    if len(text) < 2 or not HAS_ALPHA.search(text) or QUANTITY_RE.match(text) or text.lower() in ENGLISH_STOP:
        return False
    return not prose or bool(TERM_MARK.search(text))


def close_phrase(
    words: list[tuple[str, str, str, bool]], next_flag: str = "", prose: bool = False
) -> tuple[str, str] | None:
    """A phrase from consecutive ``(surface, class, flag, proper)`` words, edges cleaned, as
    ``(phrase, kind)`` (kind ``latin``, ``proper`` or ``noun``), or None."""
    seq = list(words)
    while seq and (seq[0][1] == "S" or seq[0][0] in STOP_LEAD):
        seq = seq[1:]
    while seq and (seq[-1][1] == "P" or seq[-1][0] in STOP_TRAIL):
        seq = seq[:-1]
    while len(seq) > 1 and seq[0][1] == "WA" and seq[1][1] == "N":  # 現在|プログラム → プログラム
        seq = seq[1:]
    if not seq:
        return None
    phrase = "".join(w[0] for w in seq)
    if all(w[1] == "L" for w in seq):
        return (phrase, "latin") if keep_latin(phrase, prose) else None
    if (
        (next_flag == "suru" and len(seq) == 1 and seq[0][2] == "sahen")
        or all(w[1] in ("W", "WA") for w in seq)
        or seq[-1][0] == "的"
    ):
        return None  # 使用(する) is a verb; 必要, 定期的 are not things
    if (
        len(phrase) < 2
        or len(phrase) > MAX_PHRASE_CHARS
        or phrase in STOP_PHRASES
        or NUMERIC_RE.match(phrase)
        or not WORDCHAR.search(phrase)
    ):
        return None
    proper = any(w[3] for w in seq)
    if len(seq) == 1 and not proper and len(phrase) <= 2 and KANJI_ONLY.match(phrase):
        return None  # 利用, 契約, 処理: one common two-kanji word names no thing of its own
    return phrase, "proper" if proper else "noun"


def assemble(text: str, words: Iterable[tuple[int, int, str, str, str, bool]]) -> list[tuple[str, str]]:
    """Noun phrases of ``text`` (NFKC) from its analyzed ``words`` (begin, end, surface, class, flag,
    proper): ``[(phrase, kind)]`` in order, repeats kept.

    A Latin run the analyzer cut into pieces is put back together (``apt-get``); written right
    against Japanese nouns it joins their phrase (``CSVファイル``, ``エラーコードE3010``), and is then
    also an entity of its own (``CSV``, ``E3010``). A space next to a Latin run ends the phrase.
    A word of the dictionary that holds a Latin run (``交通系ICカード``) stays one word.
    """
    spans = latin_spans(text)
    prose = english_prose(text)
    out: list[tuple[str, str]] = []
    current: list[tuple[str, str, str, bool]] = []
    after_number, index, done = False, 0, set()

    def flush(next_flag: str = "") -> None:
        nonlocal current
        words_, current = current, []
        phrase = close_phrase(words_, next_flag, prose)
        if phrase:
            out.append(phrase)
            if phrase[1] != "latin":
                out.extend((w[0], "latin") for w in words_ if w[1] == "L" and keep_latin(w[0], prose))

    for begin, end, surface, cls, flag, proper in words:
        while index < len(spans) and spans[index][1] <= begin:
            index += 1
        span = spans[index] if index < len(spans) and spans[index][0] < end and begin < spans[index][1] else None
        if span is not None and span[0] <= begin and end <= span[1]:  # a piece of a Latin run
            if index not in done:
                done.add(index)
                if not current or (span[0] > 0 and text[span[0] - 1].isspace()):
                    flush()
                current.append((text[span[0] : span[1]], "L", "", False))
                after_number = False
            continue
        if span is not None:
            done.add(index)  # the analyzer's word holds the whole run
        if cls == "SP":
            if current and current[-1][1] == "L":
                flush()
            continue
        if current and current[-1][1] == "L" and begin > 0 and text[begin - 1].isspace():
            flush()
        if cls == "NUM":
            flush()
            after_number = True
            continue
        if after_number and cls in ("S", "C"):
            continue  # 17年間, 6行目
        after_number = False
        cls = "N" if cls == "C" else "B" if surface in BREAK_SUFFIXES else cls
        if cls in ("N", "W", "WA", "P") or (cls == "S" and current):
            current.append((surface, cls, flag, proper))
        elif cls != "S":
            flush(flag)
    flush()
    return out


class SudachiAnalyzer:
    """SudachiPy, split mode C (longest units), dictionary ``sudachidict_core`` (bundled: no download)."""

    def __init__(self):
        from sudachipy import Dictionary, SplitMode

        self._tokenizer = Dictionary(dict="core").create(mode=SplitMode.C)

    def words(self, text: str) -> list[tuple[int, int, str, str, str, bool]]:
        """(begin, end, surface, class, flag, proper) of each word of ``text``."""
        out = []
        for m in self._tokenizer.tokenize(text):
            pos = m.part_of_speech()
            out.append(
                (
                    m.begin(),
                    m.end(),
                    m.surface(),
                    word_class(pos),
                    word_flag(pos, m.dictionary_form()),
                    pos[1] == "固有名詞",
                )
            )
        return out

    def noun_phrases(self, text: str) -> list[tuple[str, str]]:
        """``[(phrase, kind)]`` of ``text`` (see :func:`assemble`), line by line."""
        out: list[tuple[str, str]] = []
        for line in unicodedata.normalize("NFKC", text).split("\n"):
            for start in range(0, len(line), ANALYZER_CHARS):
                piece = line[start : start + ANALYZER_CHARS]
                if piece.strip():
                    out += assemble(piece, self.words(piece))
        return out


def entity_key(phrase: str) -> str:
    """The key that identifies an entity across chunks: NFKC, lower case, inner spaces kept."""
    return " ".join(normalize_text(phrase).split())


def clip_sentence(sentence: str) -> str:
    """A sentence as a mention keeps it (at most SENTENCE_CHARS characters)."""
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= SENTENCE_CHARS else sentence[: SENTENCE_CHARS - 1] + "…"


def chunk_graph(units: Iterable[str], phrases: Callable[[str], list[tuple[str, str]]]) -> ChunkGraph:
    """Mentions and same-sentence pairs of a chunk's ``units`` (sentences)."""
    graph = ChunkGraph()
    for unit in units:
        keys = []
        for phrase, kind in phrases(unit):
            key = entity_key(phrase)
            mention = graph.mentions.get(key)
            if mention is None:
                mention = graph.mentions[key] = Mention(key, phrase, kind, 0, clip_sentence(unit))
            mention.count += 1
            keys.append(key)
        for a, b in combinations(sorted(set(keys)), 2):
            graph.pairs[(a, b)] = graph.pairs.get((a, b), 0) + 1
    return graph


def fast_extract(text: str, metadata: dict, analyzer: SudachiAnalyzer | None = None) -> ChunkGraph:
    """The fast extractor on one chunk (the analyzer loaded once per process when not given)."""
    analyzer = analyzer or get_analyzer()
    return chunk_graph(units_of(text, metadata), analyzer.noun_phrases)


def get_analyzer() -> SudachiAnalyzer:
    """The morphological analyzer, loaded once per process (its dictionary is memory-mapped)."""
    return cached("analyzer", "sudachi-core-C", SudachiAnalyzer)


# --- GRAPH_EXTRACTOR=llm -------------------------------------------------------------------

LLM_EXTRACT_MAX_TOKENS = 400
LLM_EXTRACT_SYSTEM = (
    "あなたは文章から固有名詞・製品名・用語などのエンティティと、その間の関係を抜き出すアシスタントです。"
    'JSON で {"entities": [{"name": "文中の表記", "type": "種類", "description": "文章に書かれた説明（1文）"}], '
    '"relationships": [{"source": "エンティティ名", "target": "エンティティ名", "description": "関係（1文）"}]} '
    "を返してください。文章にない情報は書かないでください。JSON 以外は書かないでください。"
)


def graph_from_json(value: Any, text: str) -> ChunkGraph:
    """A ChunkGraph from an LLM's extraction JSON. Entities must occur in ``text`` (an invented
    name is dropped); a relationship needs both ends among them. The mention's sentence is the
    entity's description, else the first sentence naming it."""
    graph = ChunkGraph()
    if not isinstance(value, dict):
        return graph
    normalized = normalize_text(text)
    for item in value.get("entities") or []:
        if not isinstance(item, dict):
            continue
        name = " ".join(str(item.get("name") or "").split())
        key = entity_key(name)
        if len(key) < 2 or key not in normalized:
            continue
        described = str(item.get("description") or "").strip()
        sentence = described or next((s for s in sentences(text) if key in entity_key(s)), "")
        kind = str(item.get("type") or "noun").strip()[:40] or "noun"
        graph.mentions.setdefault(key, Mention(key, name, kind, normalized.count(key), clip_sentence(sentence)))
    for item in value.get("relationships") or []:
        if not isinstance(item, dict):
            continue
        a, b = entity_key(str(item.get("source") or "")), entity_key(str(item.get("target") or ""))
        if a != b and a in graph.mentions and b in graph.mentions:
            pair = (min(a, b), max(a, b))
            graph.pairs[pair] = graph.pairs.get(pair, 0) + 1
    return graph


def llm_extract(text: str, metadata: dict, llm: Any) -> ChunkGraph:
    """The LLM extractor on one chunk: an unreadable answer gives an empty graph (one warning)."""
    import logging

    model = with_options(llm, ["<|im_end|>", "<|endoftext|>", "</s>"], LLM_EXTRACT_MAX_TOKENS)
    try:
        value = parse_json_object(generate(f"文章:\n{text}", llm=model, system=LLM_EXTRACT_SYSTEM))
    except MapParseError as exc:
        logging.getLogger(__name__).warning(
            "%s: the LLM's entities could not be read (%s)", metadata.get("source", "a chunk"), exc
        )
        return ChunkGraph()
    return graph_from_json(value, text)


def chunk_extractor(settings: Any, llm: Any = None) -> Callable[[str, dict], ChunkGraph]:
    """``extract(text, metadata) -> ChunkGraph`` for GRAPH_EXTRACTOR (``off``: always empty)."""
    if settings.graph.extractor == "off":
        return lambda text, metadata: ChunkGraph()
    if settings.graph.extractor == "llm":
        if llm is None:
            llm = get_llm(settings)
        return lambda text, metadata: llm_extract(text, metadata, llm)
    return fast_extract
