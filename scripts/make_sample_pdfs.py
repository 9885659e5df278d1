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
    (
        "会社概要",
        [
            "株式会社ミナトデータは、中小企業向けのクラウド業務サービスを開発・提供するソフトウェア企業です。",
            "設立は2012年4月、本社は東京都港区芝浦3-4-1に置いています。代表取締役社長は山本直樹です。",
            "資本金は4億5000万円、従業員数は2026年3月末時点で286名です。2025年度の売上高は62億円でした。",
        ],
    ),
    (
        "沿革",
        [
            "2012年4月、東京都港区で創業しました。2015年10月に大阪支社を開設しました。",
            "2018年7月、クラウド会計サービス「ミナトクラウド会計」の提供を開始しました。",
            "2021年2月、情報セキュリティマネジメントシステムの国際規格ISO/IEC 27001の認証を取得しました。",
            "2024年9月、福岡市に福岡開発センターを開設し、開発体制を拡充しました。",
        ],
    ),
    (
        "企業理念と事業拠点",
        [
            "企業理念は「データで働く人を自由にする」です。定型業務を自動化し、人が判断に集中できる環境をつくります。",
            "事業拠点は、東京本社、大阪支社、福岡開発センターの3か所です。サポート窓口は東京本社と大阪支社にあります。",
            "主要取引銀行は、みなと中央銀行と芝浦信用金庫です。",
        ],
    ),
]

TECHNICAL_GUIDE = [
    (
        "ミナトクラウド 技術ガイド：動作環境",
        [
            "本ガイドは、ミナトクラウド各サービスを導入・運用する管理者向けの技術資料です。",
            "推奨ブラウザはGoogle Chromeの最新版とMicrosoft Edgeの最新版です。Internet Explorerには対応していません。",
            "クライアント端末には8GB以上のメモリと、1280×720以上の画面解像度を推奨します。",
        ],
    ),
    (
        "APIの利用",
        [
            "外部システムとの連携にはREST APIを利用します。ベースURLは https://api.minato-cloud.example/v2 です。",
            "認証には管理画面で発行するAPIキーを使い、リクエストのAuthorizationヘッダーにBearerトークンとして指定します。",
            "レート制限は1つのAPIキーにつき1分あたり600リクエストです。上限を超えるとHTTPステータス429が返ります。",
        ],
    ),
    (
        "エラーコード一覧",
        [
            "エラーコードE1001は認証失敗を表します。APIキーの有効期限と権限を確認してください。",
            "エラーコードE2003はデータ形式の不正を表します。日付はYYYY-MM-DD形式、金額は半角数字で送信してください。",
            "エラーコードE3010は処理のタイムアウトを表します。1回のリクエストの処理時間の上限は30秒です。",
        ],
    ),
    (
        "バックアップと復旧",
        [
            "全サービスのデータは毎日午前2時に自動でバックアップされ、保持期間は35日間です。",
            "障害時の目標復旧時間（RTO）は4時間、目標復旧時点（RPO）は24時間です。",
            "バックアップからの個別復元を希望する場合は、管理者がサポート窓口に申請してください。",
        ],
    ),
]

SERVICE_AGREEMENT = [
    (
        "サービスレベル（SLA）",
        [
            "ミナトクラウドの月間稼働率の目標は99.9%です。",
            "月間稼働率が99.9%を下回った場合は月額料金の10%を、99.0%を下回った場合は30%を、翌月の請求から減額します。",
            "定期メンテナンスの時間は、稼働率の計算から除きます。",
        ],
    ),
    (
        "契約期間と更新",
        [
            "年払いプランの契約期間は申込日から1年間です。",
            "期間満了の30日前までに解約の申し出がない場合、同じ条件で1年間自動更新されます。",
            "月払いプランは1か月単位で自動更新されます。",
        ],
    ),
    (
        "禁止事項",
        [
            "本サービスのアカウントを第三者に貸与・譲渡することを禁止します。",
            "APIを通じて過度な負荷をかける行為と、リバースエンジニアリングを禁止します。",
            "違反があった場合、当社は事前の通知なく本サービスの利用を停止できます。",
        ],
    ),
    (
        "個人情報の取扱い",
        [
            "当社は個人情報保護法に従い個人情報を取り扱います。2019年にプライバシーマークを取得しました。",
            "お客様のデータを、本サービスの提供以外の目的で利用することはありません。",
            "個人情報に関するお問い合わせは privacy@minato-data.example で受け付けます。",
        ],
    ),
]

WORK_RULES = [
    (
        "勤務時間と休憩",
        [
            "所定労働時間は1日8時間です。始業は午前9時、終業は午後6時です。",
            "休憩時間は正午から午後1時までの60分です。",
            "開発部門には、コアタイムを午前11時から午後3時とするフレックスタイム制を適用します。",
        ],
    ),
    (
        "休日と休暇",
        [
            "休日は土曜日、日曜日、国民の祝日、年末年始（12月29日から1月3日）です。",
            "年次有給休暇は、入社6か月後に10日を付与します。",
            "夏季休暇として、7月から9月の間に3日間の特別休暇を取得できます。",
        ],
    ),
    (
        "在宅勤務",
        [
            "在宅勤務は週3日まで認めます。利用する日の前日までに上長へ申請してください。",
            "在宅勤務手当として月額5000円を支給します。",
            "自宅で業務を行うときは会社が貸与したパソコンのみを使い、公共のWi-Fiには接続しないでください。",
        ],
    ),
    (
        "出張と経費精算",
        [
            "出張の旅費は、出張から戻って2週間以内にミナト経費精算で申請してください。",
            "国内出張の日当は1日あたり2000円、宿泊費の上限は1泊12000円です。",
            "新幹線は普通車指定席を利用し、グリーン車の利用は認めません。",
        ],
    ),
]


def build_pdf(path: Path, title: str, sections: list[tuple[str, list[str]]]) -> None:
    """Write one PDF: a page per section, a heading followed by its paragraphs."""
    pdfmetrics.registerFont(UnicodeCIDFont(FONT))
    heading = ParagraphStyle("h", fontName=FONT, fontSize=16, leading=24, spaceAfter=12, wordWrap="CJK")
    body = ParagraphStyle("b", fontName=FONT, fontSize=11, leading=18, spaceAfter=10, wordWrap="CJK")
    doc = SimpleDocTemplate(str(path), pagesize=A4, title=title, author="株式会社ミナトデータ", invariant=1)
    story = []
    for i, (name, paragraphs) in enumerate(sections):
        if i:
            story.append(PageBreak())
        story.append(Paragraph(name, heading))
        story.append(Spacer(1, 6))
        story.extend(Paragraph(text, body) for text in paragraphs)
    doc.build(story)


def main(out_dir: str = "data/pdf") -> None:
    """Write the four sample PDFs into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    build_pdf(out / "company_overview.pdf", "会社概要", COMPANY_OVERVIEW)
    build_pdf(out / "technical_guide.pdf", "ミナトクラウド 技術ガイド", TECHNICAL_GUIDE)
    build_pdf(out / "service_agreement.pdf", "ミナトクラウド 利用規約（抜粋）", SERVICE_AGREEMENT)
    build_pdf(out / "work_rules.pdf", "就業規則（抜粋）", WORK_RULES)


if __name__ == "__main__":
    main(*sys.argv[1:])
