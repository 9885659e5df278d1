"""Generate the sample PDFs in data/pdf/ (committed; re-run only to change them).

Uses reportlab's built-in CID font HeiseiKakuGo-W5, whose text pypdf extracts
as real Japanese. Each page is a section: a heading and paragraphs.

    .venv/bin/python scripts/make_sample_pdfs.py
"""
from __future__ import annotations

import sys
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

FONT = "HeiseiKakuGo-W5"

COMPANY_OVERVIEW = [
    ("会社概要", [
        "株式会社ミナトデータは、中小企業向けのクラウド業務サービスを開発・提供するソフトウェア企業です。",
        "設立は2012年4月、本社は東京都港区芝浦3-4-1に置いています。代表取締役社長は山本直樹です。",
        "資本金は4億5000万円、従業員数は2026年3月末時点で286名です。2025年度の売上高は62億円でした。",
    ]),
    ("沿革", [
        "2012年4月、東京都港区で創業しました。2015年10月に大阪支社を開設しました。",
        "2018年7月、クラウド会計サービス「ミナトクラウド会計」の提供を開始しました。",
        "2021年2月、情報セキュリティマネジメントシステムの国際規格ISO/IEC 27001の認証を取得しました。",
        "2024年9月、福岡市に福岡開発センターを開設し、開発体制を拡充しました。",
    ]),
    ("企業理念と事業拠点", [
        "企業理念は「データで働く人を自由にする」です。定型業務を自動化し、人が判断に集中できる環境をつくります。",
        "事業拠点は、東京本社、大阪支社、福岡開発センターの3か所です。サポート窓口は東京本社と大阪支社にあります。",
        "主要取引銀行は、みなと中央銀行と芝浦信用金庫です。",
    ]),
]

TECHNICAL_GUIDE = [
    ("ミナトクラウド 技術ガイド：動作環境", [
        "本ガイドは、ミナトクラウド各サービスを導入・運用する管理者向けの技術資料です。",
        "推奨ブラウザはGoogle Chromeの最新版とMicrosoft Edgeの最新版です。Internet Explorerには対応していません。",
        "クライアント端末には8GB以上のメモリと、1280×720以上の画面解像度を推奨します。",
    ]),
    ("APIの利用", [
        "外部システムとの連携にはREST APIを利用します。ベースURLは https://api.minato-cloud.example/v2 です。",
        "認証には管理画面で発行するAPIキーを使い、リクエストのAuthorizationヘッダーにBearerトークンとして指定します。",
        "レート制限は1つのAPIキーにつき1分あたり600リクエストです。上限を超えるとHTTPステータス429が返ります。",
    ]),
    ("エラーコード一覧", [
        "エラーコードE1001は認証失敗を表します。APIキーの有効期限と権限を確認してください。",
        "エラーコードE2003はデータ形式の不正を表します。日付はYYYY-MM-DD形式、金額は半角数字で送信してください。",
        "エラーコードE3010は処理のタイムアウトを表します。1回のリクエストの処理時間の上限は30秒です。",
    ]),
    ("バックアップと復旧", [
        "全サービスのデータは毎日午前2時に自動でバックアップされ、保持期間は35日間です。",
        "障害時の目標復旧時間（RTO）は4時間、目標復旧時点（RPO）は24時間です。",
        "バックアップからの個別復元を希望する場合は、管理者がサポート窓口に申請してください。",
    ]),
]


def build_pdf(path: Path, title: str, sections: list[tuple[str, list[str]]]) -> None:
    """Write one PDF: a page per section, a heading followed by its paragraphs."""
    pdfmetrics.registerFont(UnicodeCIDFont(FONT))
    heading = ParagraphStyle("h", fontName=FONT, fontSize=16, leading=24, spaceAfter=12, wordWrap="CJK")
    body = ParagraphStyle("b", fontName=FONT, fontSize=11, leading=18, spaceAfter=10, wordWrap="CJK")
    doc = SimpleDocTemplate(str(path), pagesize=A4, title=title, author="株式会社ミナトデータ",
                            invariant=1)
    story = []
    for i, (name, paragraphs) in enumerate(sections):
        if i:
            story.append(PageBreak())
        story.append(Paragraph(name, heading))
        story.append(Spacer(1, 6))
        story.extend(Paragraph(text, body) for text in paragraphs)
    doc.build(story)


def main(out_dir: str = "data/pdf") -> None:
    """Write company_overview.pdf and technical_guide.pdf into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    build_pdf(out / "company_overview.pdf", "会社概要", COMPANY_OVERVIEW)
    build_pdf(out / "technical_guide.pdf", "ミナトクラウド 技術ガイド", TECHNICAL_GUIDE)


if __name__ == "__main__":
    main(*sys.argv[1:])
