"""The question page's script (app.web.page puts it inline, allowed by its SHA-256): it asks, streams
the answer, shows the best passages of the top sources with the question's terms marked, the sources, a
source's text, and sends the asker's 👍/👎. Every text from the server is set with ``textContent`` or as
text nodes, never as HTML, so a document's text cannot run in the page. A raw string: the JavaScript's
backslashes are its own."""

from app.web.viewer_script import VIEWER_SCRIPT

ASK_SCRIPT = (
    r"""
const $ = (id) => document.getElementById(id);

function parseEvents(buffer, onEvent) {
  let cut;
  while ((cut = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    let kind = "message", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) kind = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    onEvent(kind, data ? JSON.parse(data) : {});
  }
  return buffer;
}

let lastQuote = "";
let history = [];  // the questions as searched, oldest first (a follow-up refers to the last)
let passagesShown = false;  // this answer's passages are on the page (a `sources` event came)
let answerId = null;  // the answer feedback is about (null: none can be given)
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
  const quoted = lastQuote ? "&quote=" + encodeURIComponent(lastQuote) : "";
  const response = await fetch("/api/source?id=" + encodeURIComponent(source) + quoted);
  const view = await response.json();
  if (!response.ok) { $("status").textContent = view.error; return; }
  showPageImage(view);
  if (view.kind === "page" && view.doc_id.toLowerCase().endsWith(".pdf") && !view.image) {
    window.open(fileLink(view), "_blank", "noopener");
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
    const cell = row.insertCell();
    if (citedCell(value, lastQuote)) {  // the cell the quote holds (or that holds the quote), marked
      const mark = document.createElement("mark");
      mark.textContent = value;
      cell.appendChild(mark);
    } else cell.textContent = value;
  }
  $("viewer-table").hidden = view.cells.length === 0;
  if (view.cells.length) $("viewer-text").textContent = "";
  else if ((view.blocks || []).length) rendered($("viewer-text"), view.blocks, lastQuote);
  else highlighted($("viewer-text"), view.text, lastQuote);
  $("viewer").hidden = false;
  // the quote's mark (a sentence, a cell, a box on the page image) in view; else the viewer's top
  const mark = $("viewer").querySelector("mark, .quote-box");
  (mark || $("viewer")).scrollIntoView({ block: mark ? "center" : "nearest" });
}

function rendered(container, blocks, passage) {
  // A Markdown section from its blocks: each an element whose text is set, list items in a list,
  // table rows in a table; the cited passage marked in the block that holds it.
  container.textContent = "";
  let list = null, table = null;
  const marked = (passage || "").replace(/\*\*|__|`/g, "");
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
  const parts = text.split(/(\[\d+\])/);
  for (const part of parts) {
    const number = /^\[(\d+)\]$/.exec(part);
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
  if ((m = /:p(\d+)$/.exec(source))) return (/\.pdf:/i.test(source) ? "PDF " : "スキャン ") + m[1] + " ページ";
  if ((m = /[:!]r(\d+)$/.exec(source))) return "表 " + m[1] + " 行目";
  if ((m = /:s(\d+)$/.exec(source))) return "スライド " + m[1];
  return source.includes("#") ? "節" : "文書";
}

function sourceLink(source) {
  const link = document.createElement("a");
  link.textContent = source;
  link.href = "#";
  link.className = "source";
  link.addEventListener("click", (event) => { event.preventDefault(); openSource(source); });
  return link;
}

function markedParts(text, marks) {
  // [[piece, marked], ...]: the text cut at its marks, [start, end) offsets counted in characters (code
  // points, as the server counts them); overlapping or touching marks merged, marks outside the text dropped.
  const chars = Array.from(text);
  const spans = (Array.isArray(marks) ? marks : [])
    .filter((m) => Array.isArray(m) && Number.isInteger(m[0]) && Number.isInteger(m[1]))
    .map(([start, end]) => [Math.max(0, start), Math.min(chars.length, end)])
    .filter(([start, end]) => start < end)
    .sort((a, b) => a[0] - b[0]);
  const parts = [];
  let at = 0;
  for (const [start, end] of spans) {
    if (end <= at) continue;
    const from = Math.max(start, at);
    if (from > at) parts.push([chars.slice(at, from).join(""), false]);
    const piece = chars.slice(from, end).join("");
    const last = parts[parts.length - 1];
    if (from === at && last && last[1]) last[0] += piece;
    else parts.push([piece, true]);
    at = end;
  }
  if (at < chars.length) parts.push([chars.slice(at).join(""), false]);
  return parts;
}

function labelled(className, text) {
  const span = document.createElement("span");
  span.className = className;
  span.textContent = text;
  return span;
}

function showPassages(passages) {
  // The best passage of each top source, its question terms marked: text nodes and <mark>s only.
  const list = $("passages");
  list.textContent = "";
  for (const passage of Array.isArray(passages) ? passages : []) {
    const item = document.createElement("li");
    item.className = "passage";
    item.dataset.source = passage.source;
    const head = document.createElement("p");
    head.className = "passage-head";
    head.append(labelled("kind", kindOf(passage.source)), sourceLink(passage.source));
    if (passage.title) head.append(" ", labelled("passage-title", passage.title));
    if (passage.superseded_by) head.append(" ", labelled("superseded", "旧版（現行: " + passage.superseded_by + "）"));
    if (passage.effective) head.title = "施行日: " + passage.effective;
    const body = document.createElement("p");
    body.className = "passage-text";
    for (const [piece, marked] of markedParts(String(passage.text || ""), passage.marks)) {
      if (!marked) { body.append(piece); continue; }
      const mark = document.createElement("mark");
      mark.textContent = piece;
      body.append(mark);
    }
    item.append(head, body);
    list.appendChild(item);
  }
  $("passages-box").hidden = list.children.length === 0;
  passagesShown = true;
}

function whenText(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return String(iso);
  const two = (n) => String(n).padStart(2, "0");
  return (when.getMonth() + 1) + "月" + when.getDate() + "日 " + two(when.getHours()) + ":" + two(when.getMinutes());
}

function showFeedback(result) {
  // 👍/👎 under the answer when the server kept it (answer_id); 👎's choices are the sources shown.
  answerId = typeof result.answer_id === "string" && result.answer_id ? result.answer_id : null;
  $("feedback").hidden = answerId === null;
  $("feedback-buttons").hidden = false;
  $("feedback-form").hidden = true;
  $("feedback-status").textContent = "";
  $("feedback-comment").value = "";
  const sources = (result.sources || []).length ? result.sources : (result.passages || []).map((p) => p.source);
  const choices = $("feedback-choices");
  choices.textContent = "";
  for (const source of [...new Set(sources), ""]) {
    const label = document.createElement("label");
    const radio = document.createElement("input");
    radio.type = "radio";
    radio.name = "feedback-source";
    radio.value = source;
    label.append(radio, " " + (source || "どれも違う"));
    choices.appendChild(label);
  }
}

async function sendFeedback(feedback) {
  if (answerId === null) return;
  $("feedback-status").textContent = "送信しています…";
  try {
    const response = await fetch("/api/feedback", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ answer_id: answerId, ...feedback }),
    });
    const reply = await response.json().catch(() => ({}));
    if (!response.ok) { $("feedback-status").textContent = reply.error || `エラー (${response.status})`; return; }
    $("feedback-buttons").hidden = true;
    $("feedback-form").hidden = true;
    $("feedback-status").textContent = "ご意見ありがとうございました。";
  } catch (error) {
    $("feedback-status").textContent = "サーバーに接続できませんでした。";
  }
}

$("helpful").addEventListener("click", () => sendFeedback({ helpful: true }));
$("unhelpful").addEventListener("click", () => {
  $("feedback-form").hidden = false;
  $("feedback-status").textContent = "";
});
$("feedback-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const checked = document.querySelector('input[name="feedback-source"]:checked');
  const source = checked ? checked.value : null;
  sendFeedback({ helpful: false, source: source || null, none_right: source === "", comment: $("feedback-comment").value });
});

function showDone(result) {
  withCitationLinks($("answer"), result.answer, result.numbered_sources || []);
  $("answer").classList.toggle("abstained", Boolean(result.abstained));
  $("status").textContent = result.status || "";  // the server's words (app.workflow.withdrawals)
  if (result.quote) { $("quote").textContent = result.quote; $("quote").hidden = false; }
  const quoted = /「(.+?)」/.exec(result.quote || "");
  lastQuote = quoted ? quoted[1].replace(/…$/, "") : "";
  const cited = new Set(result.cited_sources || []);
  const past = new Map((result.past_versions || []).map((v) => [v.source, v.superseded_by]));
  const list = $("sources");
  for (const source of result.sources || []) {
    const item = document.createElement("li");
    item.append(labelled("kind", kindOf(source)), sourceLink(source));
    if (past.has(source)) item.append(" ", labelled("superseded", "旧版（現行: " + past.get(source) + "）"));
    item.dataset.source = source;
    if (cited.has(source)) item.className = "cited";
    list.appendChild(item);
  }
  $("sources-box").hidden = list.children.length === 0;
  for (const note of result.version_notes || []) {
    const item = document.createElement("li");
    item.append(labelled("kind", "版"), document.createTextNode(note));
    list.appendChild(item);
  }
  $("timings").textContent = Object.entries(result.timings_ms || {}).map(([k, v]) => k + ": " + v + " ms").join(", ");
  $("timings-box").hidden = false;
  $("cached").textContent = result.cached_at ? "以前の回答（" + whenText(result.cached_at) + "）" : "";
  $("cached").hidden = !result.cached_at;
  showTable(result.table);
  showScope(result.scope);  // app.web.scope_script
  if (!passagesShown) showPassages(result.passages);
  showFeedback(result);
}

function showTable(table) {
  // the table path's table, SQL and result rows (text only: cells are data, never markup)
  $("table-box").hidden = !table;
  if (!table) return;
  $("table-name").textContent = "表: " + table.table;
  $("table-sql").textContent = table.sql;
  const rows = table.rows || [];
  const head = $("table-rows").tHead, body = $("table-rows").tBodies[0];
  head.textContent = ""; body.textContent = "";
  const columns = rows.length ? Object.keys(rows[0]) : [];
  const line = head.insertRow();
  for (const name of columns) { const th = document.createElement("th"); th.scope = "col"; th.textContent = name; line.appendChild(th); }
  for (const row of rows) {
    const tr = body.insertRow();
    for (const name of columns) tr.insertCell().textContent = row[name] == null ? "" : String(row[name]);
  }
}

$("ask").addEventListener("submit", async (event) => {
  event.preventDefault();
  for (const id of ["quote", "sources-box", "timings-box", "viewer", "passages-box", "feedback", "cached", "table-box",
                    "scope-shown"]) {
    $(id).hidden = true;
  }
  $("answer").textContent = ""; $("sources").textContent = ""; $("answer").className = "";
  $("passages").textContent = "";
  passagesShown = false;
  answerId = null;
  const asked = $("question").value.trim();
  let searchedAs = asked;
  $("status").textContent = "検索しています…";
  $("send").disabled = true;
  try {
    const response = await fetch("/api/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question: $("question").value, mode: $("mode").value, history, ...chosenScope() }),
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
          searchedAs = data.question;
          $("searched").textContent = "検索した質問: " + data.question;
          $("searched").hidden = !data.rewritten;
        }
        else if (kind === "queued") $("status").textContent = `順番待ち: 前に ${data.ahead} 件`;
        else if (kind === "sources") {
          showPassages(data.passages);
          if (!$("answer").textContent) $("status").textContent = "回答を書いています…";
        }
        else if (kind === "token") { $("status").textContent = ""; $("answer").textContent += data.text; }
        else if (kind === "done") { showDone(data); remember(asked, searchedAs, data); }
        else if (kind === "error") $("status").textContent = data.message;
      });
    }
  } catch (error) {
    $("status").textContent = "サーバーに接続できませんでした。";
  } finally {
    $("send").disabled = false;
  }
});
"""
    + VIEWER_SCRIPT
)
