"""What every fake service behind the page shares: no earlier answers, no passages before the answer,
one model (app.serving.service.RagService has the real ones)."""


class PageService:
    """The page's service interface besides ``ask``: overridden where a test needs more."""

    concurrency = 1

    def cached_answer(self, question, mode="hybrid", who=None):
        return None

    def passages(self, question, mode="hybrid", who=None):
        return []

    def answer_record(self, answer_id):
        return None
