"""app.graphrag.stopwords: the lists are compared with normalized, lower-cased text by the extractor
(app.graphrag.extract), so an entry in any other form would never match."""

from __future__ import annotations

import pytest

from app.graphrag.stopwords import BREAK_SUFFIXES, ENGLISH_STOP, STOP_LEAD, STOP_PHRASES, STOP_TRAIL, SURU
from app.text.keywords import normalize_text

LISTS = {
    "STOP_PHRASES": STOP_PHRASES,
    "STOP_LEAD": STOP_LEAD,
    "STOP_TRAIL": STOP_TRAIL,
    "BREAK_SUFFIXES": BREAK_SUFFIXES,
    "SURU": SURU,
    "ENGLISH_STOP": ENGLISH_STOP,
}


@pytest.mark.parametrize("name", LISTS)
def test_every_entry_is_in_the_form_it_is_compared_in(name):
    assert [w for w in LISTS[name] if normalize_text(w) != w or not w.strip()] == []


def test_english_stop_words_are_lower_case():
    assert [w for w in ENGLISH_STOP if w != w.lower()] == []
