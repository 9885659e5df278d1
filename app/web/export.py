"""The page's 「会話を保存」 (appended to app.web.page_script's script, so it runs under the same
SHA-256 in the Content-Security-Policy): the conversation so far as Markdown, built from what the page
already received (no route reads anything), downloaded as a file. Texts are escaped so a document's
link or tag stays text. A raw string: the JavaScript's backslashes are its own."""

EXPORT_SCRIPT = r"""
let conversation = [];  // this conversation's questions and answers, oldest first (「会話を保存」)

function markdownText(text) {
  // text as Markdown shows it, never as markup: a document's [link](…) or <tag> stays text
  return String(text || "").replace(/[\\`*_\[\]<>#|~]/g, (c) => "\\" + c);
}

function conversationMarkdown(turns, origin, stamp) {
  // the conversation as Markdown: per question what was asked (and searched), the answer, its quote and
  // its sources as links to the page's own source view (opened with the reader's own rights)
  const lines = ["# 会話の記録（" + stamp + "）", ""];
  turns.forEach((turn, i) => {
    lines.push("## 質問 " + (i + 1) + ": " + markdownText(turn.question), "");
    if (turn.searched && turn.searched !== turn.question) lines.push("検索した質問: " + markdownText(turn.searched), "");
    lines.push(markdownText(turn.answer), "");
    if (turn.quote) lines.push("> " + markdownText(turn.quote), "");
    const cited = new Set(turn.cited || []);
    if ((turn.sources || []).length) {
      lines.push("出典:", "");
      for (const source of turn.sources) {
        const link = origin + "/api/source?id=" + encodeURIComponent(source);
        lines.push("- [" + markdownText(source) + "](" + link + ")" + (cited.has(source) ? "（回答が引用）" : ""));
      }
      lines.push("");
    }
  });
  return lines.join("\n");
}

function remember(question, searched, result) {
  conversation.push({
    question, searched, answer: result.answer, quote: result.quote || "",
    sources: result.sources || [], cited: result.cited_sources || [],
  });
  $("export").hidden = false;
}

$("export").addEventListener("click", () => {
  const now = new Date();
  const two = (n) => String(n).padStart(2, "0");
  const day = now.getFullYear() + "-" + two(now.getMonth() + 1) + "-" + two(now.getDate());
  const stamp = day + " " + two(now.getHours()) + ":" + two(now.getMinutes());
  const blob = new Blob([conversationMarkdown(conversation, location.origin, stamp)], { type: "text/markdown;charset=utf-8" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "会話-" + day + "-" + two(now.getHours()) + two(now.getMinutes()) + ".md";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
});

$("reset").addEventListener("click", () => {
  conversation = [];
  $("export").hidden = true;
});
"""
