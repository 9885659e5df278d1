"""The page itself: one HTML document with its script, no external resources (nothing leaves the
building, and it works offline). Every text from the server is set with ``textContent``, never as
HTML, so a document's text cannot run in the page."""

PAGE = """<!doctype html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>社内文書に質問する</title>
<style>
body { font-family: system-ui, "Noto Sans JP", sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
       color: #1d1d1f; }
h1 { font-size: 1.4rem; }
form { display: flex; gap: .5rem; flex-wrap: wrap; }
#question { flex: 1 1 28rem; font-size: 1rem; padding: .5rem; }
button, select { font-size: 1rem; padding: .5rem .9rem; }
#searched { color: #555; font-size: .9rem; margin: .6rem 0 0; }
#status { color: #555; min-height: 1.4em; margin: .8rem 0 .2rem; }
#answer { white-space: pre-wrap; font-size: 1.05rem; line-height: 1.7; min-height: 2em; }
#answer.abstained { color: #8a4b00; }
#quote { border-left: 4px solid #7a9; padding: .3rem .8rem; margin: .8rem 0; color: #234; }
#sources li { margin: .2rem 0; }
.cited { font-weight: 600; }
.kind { display: inline-block; min-width: 7.5em; color: #555; font-size: .85rem; }
#timings { color: #666; font-size: .85rem; white-space: pre-wrap; }
#sources a { cursor: pointer; color: #0a58ca; text-decoration: underline; }
#viewer { border: 1px solid #ccd; border-radius: 6px; padding: .6rem .9rem; margin: .6rem 0; }
#viewer table { border-collapse: collapse; }
#viewer th, #viewer td { border: 1px solid #ccd; padding: .2rem .5rem; text-align: left; vertical-align: top; }
#viewer-text { white-space: pre-wrap; line-height: 1.7; }
mark { background: #fff1a8; }
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
</form>
<p id="searched" hidden></p>
<p id="status" role="status"></p>
<div id="answer" aria-live="polite"></div>
<blockquote id="quote" hidden></blockquote>
<section id="sources-box" hidden>
  <h2>出典</h2>
  <ol id="sources"></ol>
  <div id="viewer" hidden>
    <p id="viewer-title"></p>
    <table id="viewer-table" hidden><tbody></tbody></table>
    <div id="viewer-text"></div>
  </div>
</section>
<details id="timings-box" hidden><summary>処理時間</summary><div id="timings"></div></details>
<script>
const $ = (id) => document.getElementById(id);

function parseEvents(buffer, onEvent) {
  let cut;
  while ((cut = buffer.indexOf("\\n\\n")) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    let kind = "message", data = "";
    for (const line of block.split("\\n")) {
      if (line.startsWith("event: ")) kind = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    onEvent(kind, data ? JSON.parse(data) : {});
  }
  return buffer;
}

let lastQuote = "";
let history = [];  // the questions as searched, oldest first (a follow-up refers to the last)

$("reset").addEventListener("click", () => {
  history = [];
  $("searched").hidden = true;
  $("question").value = "";
  $("question").focus();
});

function highlighted(container, text, passage) {
  container.textContent = "";
  const at = passage ? text.indexOf(passage) : -1;
  if (at < 0) { container.textContent = text; return; }
  const mark = document.createElement("mark");
  mark.textContent = passage;
  container.append(text.slice(0, at), mark, text.slice(at + passage.length));
  mark.scrollIntoView({ block: "nearest" });
}

async function openSource(source) {
  const response = await fetch("/api/source?id=" + encodeURIComponent(source));
  const view = await response.json();
  if (!response.ok) { $("status").textContent = view.error; return; }
  if (view.kind === "page" && view.doc_id.toLowerCase().endsWith(".pdf")) {
    window.open("/files/" + view.doc_id.split("/").map(encodeURIComponent).join("/") + "#page=" + view.number,
                "_blank", "noopener");
    return;
  }
  $("viewer-title").textContent = view.source + (view.context ? "　" + view.context : "");
  const body = $("viewer-table").tBodies[0];
  body.textContent = "";
  for (const [name, value] of view.cells) {
    const row = body.insertRow();
    const th = document.createElement("th");
    th.textContent = name;
    row.appendChild(th);
    row.insertCell().textContent = value;
  }
  $("viewer-table").hidden = view.cells.length === 0;
  if (view.cells.length) $("viewer-text").textContent = "";
  else if ((view.blocks || []).length) rendered($("viewer-text"), view.blocks, lastQuote);
  else highlighted($("viewer-text"), view.text, lastQuote);
  $("viewer").hidden = false;
}

function rendered(container, blocks, passage) {
  // A Markdown section from its blocks: each an element whose text is set, list items in a list,
  // table rows in a table; the cited passage marked in the block that holds it.
  container.textContent = "";
  let list = null, table = null;
  const marked = (passage || "").replace(/\\*\\*|__|`/g, "");
  let found = false;
  for (const block of blocks) {
    let element;
    if (block.tag === "li") {
      if (!list) { list = document.createElement("ul"); container.appendChild(list); }
      element = document.createElement("li");
      list.appendChild(element);
    } else if (block.tag === "tr") {
      if (!table) { table = document.createElement("table"); container.appendChild(table); }
      const row = table.insertRow();
      for (const cell of block.cells) row.insertCell().textContent = cell;
      continue;
    } else {
      list = table = null;
      element = document.createElement(block.tag);
      container.appendChild(element);
    }
    if (!found && marked && block.text.includes(marked)) { highlighted(element, block.text, marked); found = true; }
    else element.textContent = block.text;
    if (block.tag !== "li") list = null;
    if (block.tag !== "tr") table = null;
  }
}

function withCitationLinks(container, text, numbered) {
  container.textContent = "";
  const parts = text.split(/(\\[\\d+\\])/);
  for (const part of parts) {
    const number = /^\\[(\\d+)\\]$/.exec(part);
    const source = number ? numbered[Number(number[1]) - 1] : undefined;
    if (!source) { container.append(part); continue; }
    const link = document.createElement("a");
    link.textContent = part;
    link.href = "#";
    link.title = source;
    link.className = "citation";
    link.addEventListener("click", (event) => { event.preventDefault(); openSource(source); });
    container.append(link);
  }
}

function kindOf(source) {
  let m;
  if ((m = /:p(\\d+)$/.exec(source))) return (/\\.pdf:/i.test(source) ? "PDF " : "スキャン ") + m[1] + " ページ";
  if ((m = /[:!]r(\\d+)$/.exec(source))) return "表 " + m[1] + " 行目";
  if ((m = /:s(\\d+)$/.exec(source))) return "スライド " + m[1];
  return source.includes("#") ? "節" : "文書";
}

function showDone(result) {
  withCitationLinks($("answer"), result.answer, result.numbered_sources || []);
  $("answer").classList.toggle("abstained", Boolean(result.abstained));
  const withdrawn = (result.withdrawn || []).map((w) => "「" + w + "」").join("");
  $("status").textContent = !result.abstained ? "" : withdrawn
    ? "回答に資料にない" + withdrawn + "が含まれていたため取り消しました。近い出典を示します。"
    : "資料に答えが見つかりませんでした。近い出典を示します。";
  if (result.quote) { $("quote").textContent = result.quote; $("quote").hidden = false; }
  const quoted = /「(.+?)」/.exec(result.quote || "");
  lastQuote = quoted ? quoted[1].replace(/…$/, "") : "";
  const cited = new Set(result.cited_sources || []);
  const list = $("sources");
  for (const [i, source] of (result.sources || []).entries()) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.textContent = source;
    link.addEventListener("click", () => openSource(source));
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = kindOf(source);
    item.append(kind, link);
    item.dataset.source = source;
    if (cited.has(source)) item.className = "cited";
    list.appendChild(item);
  }
  $("sources-box").hidden = list.children.length === 0;
  $("timings").textContent = Object.entries(result.timings_ms || {}).map(([k, v]) => k + ": " + v + " ms").join(", ");
  $("timings-box").hidden = false;
}

$("ask").addEventListener("submit", async (event) => {
  event.preventDefault();
  for (const id of ["quote", "sources-box", "timings-box", "viewer"]) $(id).hidden = true;
  $("answer").textContent = ""; $("sources").textContent = ""; $("answer").className = "";
  $("status").textContent = "検索しています…";
  $("send").disabled = true;
  try {
    const response = await fetch("/api/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question: $("question").value, mode: $("mode").value, history }),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      $("status").textContent = body.error || `エラー (${response.status})`;
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseEvents(buffer + value, (kind, data) => {
        if (kind === "searched") {
          history = history.concat([data.question]).slice(-3);
          $("searched").textContent = "検索した質問: " + data.question;
          $("searched").hidden = !data.rewritten;
        }
        else if (kind === "queued") $("status").textContent = `順番待ち: 前に ${data.ahead} 件`;
        else if (kind === "token") { $("status").textContent = ""; $("answer").textContent += data.text; }
        else if (kind === "done") showDone(data);
        else if (kind === "error") $("status").textContent = data.message;
      });
    }
  } catch (error) {
    $("status").textContent = "サーバーに接続できませんでした。";
  } finally {
    $("send").disabled = false;
  }
});
</script>
</body>
</html>
"""

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
</style>
</head>
<body>
<p><a href="/">← 質問に戻る</a> · <span id="user"></span> <a href="/signout">ログアウト</a></p>
<h1>保存されている文書</h1>
<p id="summary"></p>
<ul id="failures"></ul>
<button id="resync" type="button">いま再同期する（管理者）</button> <span id="resync-status"></span>
<table>
  <thead><tr><th>文書 ID</th><th>種類</th><th>チャンク</th><th>取り込み日時</th></tr></thead>
  <tbody id="documents"></tbody>
</table>
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
  if (body.admin) showSync(body.last_sync);
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
