// retrievo's search page and document view. The answer's HTML comes escaped from the server; everything else\n// is set with textContent (no HTML from data).
"use strict";

const KEY = "retrievo-key";
const authRequired = document.body.dataset.auth === "required";
const $ = (id) => document.getElementById(id);

function key() {
  return sessionStorage.getItem(KEY) || "";
}

function setState(text, warn) {
  const state = $("state");
  state.textContent = text;
  state.classList.toggle("warn", Boolean(warn));
}

async function api(name, args) {
  const headers = { "content-type": "application/json" };
  if (key()) headers.authorization = "Bearer " + key();
  const response = await fetch("/api/" + name, { method: "POST", headers, body: JSON.stringify(args) });
  const data = await response.json().catch(() => ({ error: "the server sent no JSON (" + response.status + ")" }));
  if (response.status === 401) {
    $("key-box").hidden = false;
    throw new Error("Enter a valid API key above (Authorization is required on this server).");
  }
  if (!response.ok) throw new Error(data.error || "request failed (" + response.status + ")");
  return data;
}

function setUpKey() {
  const box = $("key-box");
  box.hidden = !authRequired;
  $("key").value = key();
  $("key").addEventListener("change", () => {
    sessionStorage.setItem(KEY, $("key").value.trim());
    if ($("collection")) loadCollections();
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// The form's fields, as the server reads them (the same names the form posts without the script).
function fields() {
  const out = {};
  for (const node of $("search-form").elements) {
    if (!node.name || node.name === "key") continue; // the key goes in the Authorization header only
    if (node.type === "checkbox") out[node.name] = node.checked ? "on" : "";
    else out[node.name] = node.value.trim();
  }
  return out;
}

// The answer is rendered by the server (the same HTML the page gets without its script) and swapped in.
async function search(event) {
  if (event) event.preventDefault();
  const query = $("q").value.trim();
  if (!query) return;
  history.replaceState(null, "", "/?" + new URLSearchParams({ q: query }).toString());
  setState("Searching…");
  try {
    const found = await api("page/results", fields());
    $("results").innerHTML = found.html; // escaped by the server (surfaces/http/answer_html.py)
    setState(found.state, found.warn);
  } catch (error) {
    $("results").replaceChildren();
    setState(error.message, true);
  }
}

async function loadCollections() {
  if (authRequired && !key()) return;
  try {
    const status = await api("index_status", {});
    const select = $("collection");
    const chosen = select.value;
    select.replaceChildren(el("option", "", "default"));
    select.firstChild.value = "";
    for (const c of status.collections) {
      const option = el("option", "", c.name + " (" + c.documents + " documents)");
      option.value = c.name;
      select.appendChild(option);
    }
    select.value = chosen;
  } catch (error) {
    setState(error.message, true);
  }
}

// Offsets are in characters (code points), JavaScript strings in UTF-16 units: convert when they differ.
function unitIndex(text, points) {
  if (!/[\uD800-\uDFFF]/.test(text)) return points;
  let units = 0;
  for (let seen = 0; seen < points && units < text.length; seen++) {
    units += text.codePointAt(units) > 0xffff ? 2 : 1;
  }
  return units;
}

// Where lines first..last (1-based, inclusive) lie in text, as [start, end) in the string's own units.
function lineSpan(text, first, last) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  const from = starts[Math.min(Math.max(first, 1), starts.length) - 1];
  const to = last < starts.length ? starts[last] - 1 : text.length;
  return [from, Math.max(from, to)];
}

async function showDocument() {
  const params = new URLSearchParams(location.search);
  const byLines = params.has("line_start");
  const start = Number(params.get("start") || 0);
  const end = Number(params.get("end") || 0);
  const args = { document_id: params.get("document_id") || "", max_chars: 100000, start: 0 };
  if (params.get("revision_id")) args.revision_id = params.get("revision_id");
  let text = "";
  let page;
  try {
    do {
      page = await api("get_document", args);
      text += page.text;
      args.start = page.next_start;
    } while (page.next_start != null && text.length < 5000000);
  } catch (error) {
    $("title").textContent = "Cannot open this document";
    setState(error.message, true);
    return;
  }
  $("title").textContent = page.title || page.path;
  const revision = page.uri.split("/revision/")[1] || "";
  $("where").textContent = page.path + " · revision " + revision + (page.is_current ? "" : " (not current)");
  const doc = $("doc");
  const first = Number(params.get("line_start") || 1);
  const last = Number(params.get("line_end") || first);
  const [from, to] = byLines ? lineSpan(text, first, last) : [unitIndex(text, start), unitIndex(text, end)];
  const mark = el("mark", "", text.slice(from, to));
  mark.id = "hit";
  doc.replaceChildren(document.createTextNode(text.slice(0, from)), mark, document.createTextNode(text.slice(to)));
  mark.scrollIntoView({ block: "center" });
  doc.focus({ preventScroll: true });
  setState(byLines ? "The cited lines (" + first + "–" + last + ") are marked."
    : "The cited passage (characters " + start + "–" + end + ") is marked.");
}

setUpKey();
if ($("search-form")) {
  $("search-form").addEventListener("submit", search);
  loadCollections();
  const q = new URLSearchParams(location.search).get("q");
  const rendered = document.querySelector("main").dataset.rendered === "yes";
  if (q && !rendered) {
    $("q").value = q;
    search();
  }
} else {
  if (history.length > 1) $("back").addEventListener("click", (e) => { e.preventDefault(); history.back(); });
  showDocument();
}
