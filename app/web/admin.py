"""``GET /admin``: the administrator's view of what people met when they asked (app.serving.usage),
rendered on the server as one HTML page with an inline SVG chart of the last 30 days and no script at
all (its Content-Security-Policy allows none), so it works under the page's rules and offline.

An administrator (group ``admin``, or this machine's user from this machine in single-team mode)
gets the page; anyone else 403 with one line (the guard answers first for an unknown asker). It reads
as an administrator: the audit log's answers (AUDIT_LOG=1, with migration 14's outcome and timings),
the answers flagged 👎, the stored documents and the most flagged questions. Question texts appear
only where AUDIT_LOG_QUESTIONS=1 allowed storing them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import date
from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from app.permissions.principals import FULL_ACCESS
from app.serving.usage import DAY_COLUMNS, Day, Usage, day_cells, ms_text, summarize
from app.users.identity import Identity

ADMIN_ONLY = "利用状況は管理者（admin グループ）だけが見られます"
CHART_DAYS = 30
DEFAULT_DAYS = 30
FLAGGED_SHOWN = 10
ADMIN_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# the chart's geometry, in SVG user units (whole numbers: the markup is tested exactly)
BAR, GAP, LEFT, TOP, PLOT, BOTTOM, RIGHT = 14, 4, 28, 10, 100, 18, 6
ANSWERED_COLOR, REFUSED_COLOR = "#4a7bb7", "#d9822b"


def chart_svg(days: Sequence[Day]) -> str:
    """An inline SVG bar chart of ``days`` (oldest first): per day a bar of the questions, its answered
    part blue and its refusals orange on top, a ``<title>`` per bar with the day's figures; the axis
    names the tallest day's count, and the first and last day are labelled ``MM/DD``."""
    top = max((d.questions for d in days), default=0) or 1
    width = LEFT + len(days) * (BAR + GAP) + RIGHT
    height = TOP + PLOT + BOTTOM
    base = TOP + PLOT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="直近{len(days)}日の質問と回答なしの数">',
        f'<line x1="{LEFT - 2}" y1="{base}" x2="{width - RIGHT}" y2="{base}" stroke="#999"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" font-size="10" text-anchor="end">{top}</text>',
        f'<text x="{LEFT - 4}" y="{base}" font-size="10" text-anchor="end">0</text>',
    ]
    for i, day in enumerate(days):
        x = LEFT + i * (BAR + GAP)
        total = round(day.questions * PLOT / top)
        refused = round(day.refusals * PLOT / top)
        label = f"{day.day}: 質問 {day.questions}、回答なし {day.refusals}、👎 {day.flagged}"
        parts.append(f"<g><title>{escape(label)}</title>")
        if total - refused:
            parts.append(
                f'<rect x="{x}" y="{base - total}" width="{BAR}" height="{total - refused}" fill="{ANSWERED_COLOR}"/>'
            )
        if refused:
            parts.append(
                f'<rect x="{x}" y="{base - refused}" width="{BAR}" height="{refused}" fill="{REFUSED_COLOR}"/>'
            )
        parts.append("</g>")
    for i in sorted({0, len(days) - 1}) if days else ():
        x = LEFT + i * (BAR + GAP) + BAR // 2
        when = days[i].day.strftime("%m/%d") if days[i].day else ""
        parts.append(f'<text x="{x}" y="{height - 4}" font-size="10" text-anchor="middle">{when}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], empty: str) -> str:
    if not rows:
        return f"<p>{escape(empty)}</p>"
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def admin_page(
    usage: Usage,
    chart: Sequence[Day],
    flagged: Sequence[dict],
    *,
    days: int,
    audit_on: bool,
    show_questions: bool,
    feedback_on: bool,
) -> str:
    """The page: the chart of ``chart``'s days, the per-day table (days with answers, newest first, and the total), the
    slowest answers, the most and never cited documents, the most flagged questions; every value escaped."""
    hidden = "（質問文は保存されていません: AUDIT_LOG_QUESTIONS=1 で保存）"
    sections = [f"<h1>利用状況（直近 {days} 日）</h1>"]
    if not audit_on:
        sections.append('<p class="note">AUDIT_LOG=1 ではないため、質問は記録されていません。</p>')
    sections.append(f"<h2>直近 {len(chart)} 日</h2>{chart_svg(chart)}")
    sections.append(
        '<p class="legend"><span class="answered">■</span> 回答 <span class="refused">■</span> 回答なし</p>'
    )
    per_day = [day_cells(d) for d in reversed(usage.days) if d.questions] + [day_cells(usage.total)]
    sections.append("<h2>日ごと</h2>" + _table(DAY_COLUMNS, per_day, ""))
    slow = [
        (
            f"{s.at.astimezone():%Y-%m-%d %H:%M}",
            s.surface,
            ms_text(s.total_ms),
            ms_text(s.first_token_ms),
            s.question or hidden,
        )
        for s in usage.slowest
    ]
    sections.append(
        "<h2>時間のかかった回答</h2>"
        + _table(("日時", "経路", "回答まで", "最初の文字まで", "質問"), slow, "記録された回答はありません。")
    )
    cited = [(doc, str(count)) for doc, count in usage.most_cited]
    sections.append("<h2>よく引用される文書</h2>" + _table(("文書", "引用した回答"), cited, "引用はまだありません。"))
    never = "".join(f"<li>{escape(doc)}</li>" for doc in usage.never_cited)
    sections.append(f"<h2>引用されていない文書（{len(usage.never_cited)}）</h2><ul>{never}</ul>")
    flagged_rows = [
        (
            row["question"] if show_questions else hidden,
            str(row["flagged"]),
            str(row["helpful"]),
            ", ".join(row["chosen_sources"]),
        )
        for row in flagged
    ]
    none_flagged = (
        "まだ指摘はありません。" if feedback_on else "FEEDBACK=0 のため、フィードバックは記録されていません。"
    )
    sections.append(
        "<h2>よく指摘される質問（👎）</h2>" + _table(("質問", "👎", "👍", "選ばれた出典"), flagged_rows, none_flagged)
    )
    head = PAGE_HEAD.replace('value="DAYS"', f'value="{days}"')
    return head + "".join(sections) + "</body>\n</html>\n"


PAGE_HEAD = f"""<!doctype html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>利用状況</title>
<style>
body {{ font-family: system-ui, "Noto Sans JP", sans-serif; max-width: 64rem; margin: 2rem auto; padding: 0 1rem; }}
table {{ border-collapse: collapse; width: 100%; margin-bottom: 1rem; }}
th, td {{ border-bottom: 1px solid #dde; padding: .3rem .5rem; text-align: left; }}
.note {{ color: #8a4b00; }}
.answered {{ color: {ANSWERED_COLOR}; }} .refused {{ color: {REFUSED_COLOR}; }}
</style>
</head>
<body>
<p><a href="/">← 質問に戻る</a> · <a href="/documents">保存されている文書</a> ·
<form method="get" action="/admin" style="display:inline">期間 <input name="days" size="3" value="DAYS"> 日
<button type="submit">表示</button></form></p>
"""


def usage_report(service: Any, reader: Identity, days: int, today: date | None = None) -> str:
    """The page over ``service`` (its settings, store and documents), read as ``reader`` (an administrator)."""
    from app.serving.feedback import flagged_questions
    from app.storage.usage import answer_rows, flagged_answer_ids

    settings, engine = service.settings, service.store.engine
    read = max(days, CHART_DAYS) + 1  # calendar days: one more day of rows, cut by summarize at midnight
    rows = answer_rows(engine, reader.principals, read)
    feedback_on = bool(settings.memory.feedback)
    collection = settings.retrieval.collection_name
    flagged_ids = flagged_answer_ids(engine, collection, reader.principals, read) if feedback_on else set()
    doc_ids = [d["doc_id"] for d in service.list_documents(reader)]
    today = today or date.today()
    usage = summarize(rows, flagged_ids, doc_ids, today, days)
    chart = summarize(rows, flagged_ids, doc_ids, today, CHART_DAYS).days
    flagged = flagged_questions(settings, engine, FLAGGED_SHOWN) if feedback_on else []
    access = settings.access
    return admin_page(
        usage,
        chart,
        flagged,
        days=days,
        audit_on=access.audit,
        show_questions=access.audit_questions,
        feedback_on=feedback_on,
    )


def read_days(value: str | None, most: int) -> int:
    """The ``days`` query parameter: a whole number from 1 to ``most`` (the audit's retention);
    ValueError with the one line the page shows otherwise."""
    if value is None or value == "":
        return min(DEFAULT_DAYS, most)
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= most:
        raise ValueError(f"days は 1 から {most} までの整数で指定してください")
    return int(value)


def admin_reader(who: Identity) -> Identity:
    """Who the view reads as: the administrator; in single-team mode this machine's user, who
    administers from this machine, reads as the owner (FULL_ACCESS) like the sync."""
    return who if who.admin else Identity(who.name, FULL_ACCESS, who.kind)


def admin_routes(
    service: Any,
    *,
    who: Callable[[Request], Identity],
    administers: Callable[[Request, Identity], bool],
    guarded: Callable[[Callable[[Request], Any]], Callable[[Request], Any]],
) -> list[Route]:
    """``GET /admin`` over ``service``, with the app's own helpers (app.web.app): ``who`` says who
    asks, ``administers`` whether they may see it, ``guarded`` answers 503 when the database is gone."""

    async def admin(request: Request) -> Response:
        asker = who(request)
        if not administers(request, asker):
            return PlainTextResponse(ADMIN_ONLY, status_code=403)
        try:
            days = read_days(request.query_params.get("days"), service.settings.access.audit_retention_days)
        except ValueError as exc:
            return PlainTextResponse(str(exc), status_code=400)
        page = await asyncio.to_thread(usage_report, service, admin_reader(asker), days)
        return HTMLResponse(page, headers=ADMIN_HEADERS)

    return [Route("/admin", guarded(admin), methods=["GET"])]


ADMIN_HEADERS = {
    "Content-Security-Policy": ADMIN_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
