"""The question page's 絞り込み (scope) script (app.web.page puts it inline after app.web.page_script's, in
the same script, so its functions are the ask script's too): it fills the folder and format choices from
``GET /api/scopes`` (what the asker may read), gives the ask body its ``scope`` (:js:`chosenScope`) and shows
the scope an answer was read within (:js:`showScope`). Option and label texts are set with ``textContent``."""

SCOPE_SCRIPT = r"""
function scopeOption(value, text) {
  const option = document.createElement("option");
  option.value = value;
  option.textContent = text;
  return option;
}

async function loadScopes() {
  // the folders and formats of the documents the asker may read (the server reads as them)
  try {
    const response = await fetch("/api/scopes");
    if (!response.ok) return;
    const choices = await response.json();
    const folder = $("scope-folder"), format = $("scope-format");
    folder.textContent = ""; format.textContent = "";
    folder.append(scopeOption("", "すべてのフォルダ"));
    for (const name of choices.folders || []) folder.append(scopeOption(name, name));
    format.append(scopeOption("", "すべての形式"));
    for (const name of choices.formats || []) format.append(scopeOption(name, name.toUpperCase()));
  } catch (error) {
    // no choices: the question is asked over every document, as before
  }
}

function chosenScope() {
  // {scope: {...}} for the ask body, {} when nothing is chosen
  const scope = {};
  if ($("scope-folder").value) scope.folders = [$("scope-folder").value];
  if ($("scope-format").value) scope.formats = [$("scope-format").value];
  if ($("scope-since").value) scope.since = $("scope-since").value;
  return Object.keys(scope).length ? { scope } : {};
}

function scopeText(scope) {
  // 「絞り込み: docs/規程/ · PDF · 2025-04-01 以降」, or "" for an answer read from every document
  if (!scope) return "";
  const parts = [...(scope.folders || []), ...(scope.formats || []).map((f) => f.toUpperCase())];
  if (scope.since) parts.push(scope.since + " 以降");
  return parts.length ? "絞り込み: " + parts.join(" · ") : "";
}

function showScope(scope) {
  const text = scopeText(scope);
  $("scope-shown").textContent = text;
  $("scope-shown").hidden = !text;
}

$("scope-clear").addEventListener("click", () => {
  $("scope-folder").value = ""; $("scope-format").value = ""; $("scope-since").value = "";
  $("scope-folder").focus();
});
loadScopes();
"""
