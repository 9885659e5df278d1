"""Evidence a person can check: the passages given to the model and the quote under an answer.

* :mod:`app.workflow.evidence.windows` chooses the evidence the model reads: sentence windows (a sentence
  with its neighbours; a short chunk such as a CSV row whole) from all SEARCH_K candidates, scored
  by the question's keyword terms, the embedder and the candidate's rank, within a character budget;
* :mod:`app.workflow.evidence.answer` asks for ``[n] answer`` under a grammar (the evidence number first, so
  the small model commits to one passage) and reads the reply;
* :mod:`app.workflow.checks.quote` finds, mechanically, the verbatim sentence the answer was taken from.

May import :mod:`app.text`, :mod:`app.workflow.prompts` and :mod:`app.workflow.checks`.
"""

from app.workflow.checks.quote import MAX_QUOTE_CHARS, MIN_SHARE, Quote, find_quote
from app.workflow.evidence.windows import Window, select_evidence

__all__ = ["MAX_QUOTE_CHARS", "MIN_SHARE", "Quote", "Window", "find_quote", "select_evidence"]
