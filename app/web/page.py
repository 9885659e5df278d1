"""The page itself: one HTML document with its script (app.web.page_script), no external resources
(nothing leaves the building, and it works offline). Every text from the server is set with
``textContent``, never as HTML, so a document's text cannot run in the page."""

from app.web.export import EXPORT_SCRIPT
from app.web.page_script import ASK_SCRIPT
from app.web.scope_script import SCOPE_SCRIPT

PAGE = (
    """<!doctype html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>社内文書に質問する</title>
<style>
body { font-family: system-ui, "Noto Sans JP", sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
       color: #1d1d1f; }
h1 { font-size: 1.4rem; }
[hidden] { display: none !important; }
#ask { display: flex; gap: .5rem; flex-wrap: wrap; }
#question { flex: 1 1 28rem; font-size: 1rem; padding: .5rem; }
button, select { font-size: 1rem; padding: .5rem .9rem; }
#searched { color: #555; font-size: .9rem; margin: .6rem 0 0; }
#status { color: #555; min-height: 1.4em; margin: .8rem 0 .2rem; }
#answer { white-space: pre-wrap; font-size: 1.05rem; line-height: 1.7; min-height: 2em; }
#answer.abstained { color: #8a4b00; }
#quote { border-left: 4px solid #7a9; padding: .3rem .8rem; margin: .8rem 0; color: #234; }
#sources li { margin: .2rem 0; }
#cached { color: #555; font-size: .9rem; margin: .2rem 0; }
#feedback { margin: .6rem 0; font-size: .95rem; }
#feedback button { font-size: .95rem; padding: .2rem .6rem; margin-left: .3rem; }
#feedback-form fieldset { border: 1px solid #ccd; border-radius: 6px; margin: .5rem 0; }
#feedback-form label { display: block; margin: .15rem 0; }
#feedback-comment { width: 100%; box-sizing: border-box; font-size: 1rem; }
#feedback-status { color: #235; margin: .3rem 0; }
#passages li { margin: .6rem 0; }
.passage-head { margin: 0; }
.passage-title { color: #555; font-size: .85rem; }
.superseded { color: #8a4b00; font-size: .85rem; font-weight: 600; }
.passage-text { white-space: pre-wrap; line-height: 1.7; margin: .2rem 0 0; }
.cited { font-weight: 600; }
.kind { display: inline-block; min-width: 7.5em; color: #555; font-size: .85rem; }
#timings { color: #666; font-size: .85rem; white-space: pre-wrap; }
a.source { cursor: pointer; color: #0a58ca; text-decoration: underline; }
#viewer { border: 1px solid #ccd; border-radius: 6px; padding: .6rem .9rem; margin: .6rem 0; }
#viewer table { border-collapse: collapse; }
#viewer th, #viewer td { border: 1px solid #ccd; padding: .2rem .5rem; text-align: left; vertical-align: top; }
#viewer-text { white-space: pre-wrap; line-height: 1.7; }
mark { background: #fff1a8; }
#viewer-page, .other-page { position: relative; display: inline-block; max-width: 100%; margin: .3rem 0; }
#viewer-page img, .other-page img { display: block; max-width: 100%; height: auto; border: 1px solid #ccd; }
.quote-box { position: absolute; background: rgba(255, 214, 0, .35); outline: 2px solid rgba(214, 140, 0, .85); pointer-events: none; }
#viewer-stale { color: #a04000; }
#table-box { margin: .6rem 0; font-size: .95rem; }
#table-sql { white-space: pre-wrap; background: #f5f5f7; padding: .4rem .6rem; border-radius: 4px; }
#table-rows { border-collapse: collapse; }
#table-rows th, #table-rows td { border: 1px solid #ccd; padding: .2rem .5rem; text-align: left; vertical-align: top; }
#scope { display: flex; gap: .4rem 1rem; flex-wrap: wrap; align-items: center; border: 1px solid #ccd;
         border-radius: 6px; margin: .6rem 0 0; padding: .3rem .8rem .5rem; font-size: .95rem; }
#scope select, #scope input, #scope button { font-size: .95rem; padding: .25rem .4rem; }
#scope-shown { color: #235; font-size: .9rem; margin: .2rem 0; }
</style>
</head>
<body>
<h1>社内文書に質問する</h1>
<p><a href="/documents">保存されている文書</a> · <a href="/signout">ログアウト</a></p>
<form id="ask">
  <input id="question" name="question" maxlength="2000" autocomplete="off"
         placeholder="例: サポート窓口の受付時間は？" required>
  <select id="mode" name="mode" title="検索の方法">
    <option value="hybrid">通常（ハイブリッド）</option>
    <option value="auto">自動（グラフ検索も）</option>
    <option value="local">グラフ（ローカル）</option>
    <option value="global">グラフ（全体の要約）</option>
    <option value="vector">ベクトルのみ</option>
    <option value="keyword">キーワードのみ</option>
  </select>
  <button id="send" type="submit">質問する</button>
  <button id="reset" type="button" title="前の質問を引き継がずに聞き直す">新しい会話</button>
  <button id="export" type="button" title="この会話の質問・回答・引用・出典を Markdown で保存" hidden>会話を保存</button>
</form>
<fieldset id="scope">
  <legend>絞り込み</legend>
  <label for="scope-folder">フォルダ</label>
  <select id="scope-folder" name="scope-folder"><option value="">すべてのフォルダ</option></select>
  <label for="scope-format">形式</label>
  <select id="scope-format" name="scope-format"><option value="">すべての形式</option></select>
  <label for="scope-since">この日以降</label>
  <input id="scope-since" name="scope-since" type="date">
  <button id="scope-clear" type="button">解除</button>
</fieldset>
<p id="searched" hidden></p>
<p id="status" role="status"></p>
<p id="cached" hidden></p>
<p id="scope-shown" hidden></p>
<div id="answer" aria-live="polite"></div>
<blockquote id="quote" hidden></blockquote>
<div id="feedback" hidden>
  <span id="feedback-buttons">この回答は役に立ちましたか？
    <button id="helpful" type="button">👍 役に立った</button>
    <button id="unhelpful" type="button">👎 違う</button>
  </span>
  <form id="feedback-form" hidden>
    <fieldset><legend>正しい出典はどれでしたか？</legend><div id="feedback-choices"></div></fieldset>
    <textarea id="feedback-comment" maxlength="1000" rows="2" placeholder="コメント（任意）"></textarea>
    <button id="feedback-send" type="submit">送信</button>
  </form>
  <p id="feedback-status" role="status"></p>
</div>
<details id="table-box" hidden>
  <summary>計算に使った行と式</summary>
  <p id="table-name"></p>
  <pre id="table-sql"></pre>
  <table id="table-rows"><thead></thead><tbody></tbody></table>
</details>
<section id="passages-box" hidden>
  <h2>該当箇所</h2>
  <ol id="passages"></ol>
</section>
<section id="sources-box" hidden>
  <h2>出典</h2>
  <ol id="sources"></ol>
</section>
<div id="viewer" hidden>
  <p id="viewer-title"></p>
  <p id="viewer-stale" hidden>この引用は取り込み時の版のものです（ファイルはその後変更されています）</p>
  <div id="viewer-page" hidden><img id="viewer-image" alt=""></div>
  <p id="viewer-file" hidden><a id="viewer-file-link" target="_blank" rel="noopener">PDF をブラウザで開く</a></p>
  <table id="viewer-table" hidden><tbody></tbody></table>
  <div id="viewer-text"></div>
</div>
<details id="timings-box" hidden><summary>処理時間</summary><div id="timings"></div></details>
<script>"""
    + ASK_SCRIPT
    + SCOPE_SCRIPT
    + EXPORT_SCRIPT
    + """</script>
</body>
</html>
"""
)

DOCUMENTS_PAGE = """<!doctype html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>保存されている文書</title>
<style>
body { font-family: system-ui, "Noto Sans JP", sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #dde; padding: .3rem .5rem; text-align: left; }
td.n { text-align: right; }
#failures li, #summary.error { color: #8a1c00; }
#flagged-box { margin-top: 2rem; }
</style>
</head>
<body>
<p><a href="/">← 質問に戻る</a> · <span id="user"></span> <a href="/signout">ログアウト</a>
<a id="admin-link" href="/admin" hidden>· 利用状況（管理者）</a></p>
<h1>保存されている文書</h1>
<p id="summary"></p>
<ul id="failures"></ul>
<button id="resync" type="button">いま再同期する（管理者）</button> <span id="resync-status"></span>
<table>
  <thead><tr><th>文書 ID</th><th>種類</th><th>チャンク</th><th>取り込み日時</th></tr></thead>
  <tbody id="documents"></tbody>
</table>
<section id="flagged-box" hidden>
  <h2>よく指摘される質問（👎）</h2>
  <p id="flagged-none" hidden>まだ指摘はありません。</p>
  <table>
    <thead><tr><th>質問</th><th>👎</th><th>👍</th><th>どれも違う</th><th>選ばれた出典</th><th>コメント</th><th>最後の指摘</th></tr></thead>
    <tbody id="flagged"></tbody>
  </table>
</section>
<script>
const $ = (id) => document.getElementById(id);

function showSync(sync) {
  $("summary").textContent = sync ? "前回の同期: " + sync.summary : "このサーバーが起動してから同期はまだありません。";
  $("failures").textContent = "";
  for (const reason of (sync && sync.failures) || []) {
    const item = document.createElement("li");
    item.textContent = reason;
    $("failures").appendChild(item);
  }
}

async function load() {
  const response = await fetch("/api/documents");
  const body = await response.json();
  const rows = $("documents");
  rows.textContent = "";
  $("summary").className = response.ok ? "" : "error";
  if (!response.ok) {  // the database is gone: say so, not an empty table
    $("summary").textContent = body.error || "文書の一覧を読めませんでした（HTTP " + response.status + "）";
    return;
  }
  for (const doc of body.documents) {
    const row = rows.insertRow();
    row.insertCell().textContent = doc.doc_id;
    row.insertCell().textContent = (doc.doc_id.split(".").pop() || "").toUpperCase();
    const chunks = row.insertCell();
    chunks.textContent = doc.chunks;
    chunks.className = "n";
    row.insertCell().textContent = (doc.ingested_at || "").replace("T", " ").slice(0, 19);
  }
  $("user").textContent = body.user ? "ログイン中: " + body.user : "";
  $("resync").hidden = !body.admin;  // re-sync and the skipped files are the administrator's
  $("admin-link").hidden = !body.admin;
  if (body.admin) { showSync(body.last_sync); await loadFlagged(); }
}

async function loadFlagged() {
  // the questions askers flagged most (the administrator's; FEEDBACK=0: none kept)
  const response = await fetch("/api/feedback");
  if (!response.ok) return;
  const body = await response.json();
  const rows = $("flagged");
  rows.textContent = "";
  for (const question of body.questions) {
    const row = rows.insertRow();
    row.insertCell().textContent = question.question;
    for (const count of [question.flagged, question.helpful, question.none_right]) {
      const cell = row.insertCell();
      cell.textContent = count;
      cell.className = "n";
    }
    row.insertCell().textContent = question.chosen_sources.join(", ");
    row.insertCell().textContent = question.comments.join(" / ");
    row.insertCell().textContent = (question.last_flagged || "").replace("T", " ").slice(0, 16);
  }
  $("flagged-none").hidden = body.questions.length > 0;
  $("flagged-box").hidden = !body.enabled;
}

$("resync").addEventListener("click", async () => {
  $("resync").disabled = true;
  $("resync-status").textContent = "同期しています…";
  try {
    const response = await fetch("/api/sync", { method: "POST" });
    const body = await response.json();
    $("resync-status").textContent = response.ok ? "完了しました" : body.error;
    if (response.ok) { showSync(body); await load(); }
  } finally {
    $("resync").disabled = false;
  }
});
load();
</script>
</body>
</html>
"""


def content_security_policy(page: str) -> str:
    """The page's Content-Security-Policy: its own inline script only (by its SHA-256), its inline
    style, requests to itself; no frames around it, no plugins, no other site. A second defence
    behind ``textContent``: even text that became markup could not run or fetch from elsewhere."""
    import base64
    import hashlib

    script = page.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'self'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src 'self'; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
