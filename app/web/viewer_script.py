"""The source viewer's page-image and row-cell script (app.web.page_script joins it to the ask script,
so its functions are that script's too): a PDF or scan page as its image with the quote's boxes over
it (app.web.page_image), and the page before or after it too when the quote runs across the page break
(``view.pages``), the link to the file at its page, and which row cell a quote cites."""

VIEWER_SCRIPT = r"""
function fileLink(view) {
  return "/files/" + view.doc_id.split("/").map(encodeURIComponent).join("/") + "#page=" + view.number;
}

function markQuote(frame, boxes) {  // the quote's boxes over one page image, in percentages of it
  for (const box of boxes || []) {
    const mark = document.createElement("div");
    mark.className = "quote-box";
    mark.setAttribute("role", "mark");
    mark.setAttribute("aria-label", "引用: " + lastQuote);
    mark.style.left = box.x * 100 + "%";
    mark.style.top = box.y * 100 + "%";
    mark.style.width = box.w * 100 + "%";
    mark.style.height = box.h * 100 + "%";
    frame.appendChild(mark);
  }
}

function otherPage(view, page) {  // the page a quote runs onto (or from), beside the cited one
  const frame = document.createElement("div");
  frame.className = "viewer-page other-page";
  const image = document.createElement("img");
  image.alt = view.doc_id + " の " + page.number + " ページ";
  image.src = page.image;
  frame.appendChild(image);
  markQuote(frame, page.boxes);
  return frame;
}

function showPageImage(view) {  // a PDF or scan page as its image, the quote's boxes over it (app.web.page_image)
  const wrapper = $("viewer-page");
  for (const old of wrapper.querySelectorAll(".quote-box")) old.remove();
  for (const old of document.querySelectorAll(".other-page")) old.remove();
  $("viewer-stale").hidden = !view.stale;
  wrapper.hidden = !view.image;
  $("viewer-file").hidden = !(view.image && view.kind === "page" && view.doc_id.toLowerCase().endsWith(".pdf"));
  if (!view.image) { $("viewer-image").removeAttribute("src"); return; }
  if (!$("viewer-file").hidden) $("viewer-file-link").href = fileLink(view);
  $("viewer-image").alt = view.doc_id + " の " + (view.number || 1) + " ページ";
  $("viewer-image").src = view.image;
  markQuote(wrapper, view.boxes);
  for (const page of view.pages || []) {  // the quote runs across a page break: the other page, in order
    if (page.number === view.number) continue;
    if (page.number < view.number) wrapper.before(otherPage(view, page));
    else wrapper.after(otherPage(view, page));
  }
}

function citedCell(value, quote) {
  // whether a row's cell is what the quote cites: the quote holds the cell's value (「回答:…」 holds the
  // answer cell) or the cell holds the quote; a value of one character is never marked by itself
  const cell = String(value || "").trim(), cited = String(quote || "").trim();
  if (!cell || !cited) return false;
  return cell.includes(cited) || (cell.length >= 2 && cited.includes(cell));
}
"""
