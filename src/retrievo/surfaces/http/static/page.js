// retrievo's search page and document view: plain DOM, text set with textContent only (no HTML from data).
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

// The query's words (three letters or more) marked in a passage, as <mark> elements (text nodes only).
function marked(node, text, query) {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}_]{3,}/gu) || []).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!words.length) {
    node.appendChild(document.createTextNode(text));
    return node;
  }
  const pattern = new RegExp("(" + words.join("|") + ")", "giu");
  text.split(pattern).forEach((part, i) => {
    if (part) node.appendChild(i % 2 ? el("mark", "", part) : document.createTextNode(part));
  });
  return node;
}

// Prose: a window of the passage around its first matched word.
function excerpt(text, query) {
  const flat = text.replace(/\s+/g, " ").trim();
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]{3,}/gu) || [];
  const at = Math.max(0, Math.min(...words.map((w) => flat.toLowerCase().indexOf(w)).filter((i) => i >= 0), flat.length));
  const from = at > 120 ? flat.lastIndexOf(" ", at - 80) + 1 : 0;
  const shown = (from ? "…" : "") + flat.slice(from, from + 320) + (flat.length > from + 320 ? "…" : "");
  return marked(el("p", "excerpt"), shown, query);
}

// Code: its own lines, monospace, numbered from the file's line (the first CODE_LINES, then "…").
const CODE_LINES = 14;
function codeBlock(hit, query) {
  const pre = el("pre", "code");
  const lines = hit.text.replace(/\n+$/, "").split("\n");
  lines.slice(0, CODE_LINES).forEach((line, i) => {
    const row = el("span", "line");
    row.appendChild(el("span", "no", String(hit.line_start + i)));
    marked(row, line + "\n", query);
    pre.appendChild(row);
  });
  if (lines.length > CODE_LINES) pre.appendChild(el("span", "more", "… " + (lines.length - CODE_LINES) + " more lines"));
  return pre;
}

// A path relative to the indexed root that holds it (the deepest); with several roots, the root's name first.
function shownPath(path, roots) {
  let best = "";
  for (const root of roots || []) {
    const prefix = root.endsWith("/") ? root : root + "/";
    if (path.startsWith(prefix) && prefix.length > best.length) best = prefix;
  }
  if (!best) return path;
  const inside = path.slice(best.length);
  return roots.length > 1 ? best.slice(0, -1).split("/").pop() + "/" + inside : inside;
}

// A hit cites retrievo://document/ID/revision/REV and its lines: the view marks those lines.
function citation(hit, roots) {
  const lines = hit.line_start === hit.line_end ? hit.line_start : hit.line_start + "-" + hit.line_end;
  const [, documentId, revisionId] = hit.uri.match(/^retrievo:\/\/document\/([^/]+)\/revision\/([^/]+)$/) || [];
  const params = new URLSearchParams({
    document_id: documentId || "", revision_id: revisionId || "", line_start: hit.line_start, line_end: hit.line_end,
  });
  const a = el("a", "cite", shownPath(hit.path, roots) + ":" + lines);
  a.href = "/view?" + params.toString();
  a.title = hit.path;
  return a;
}

// Relevance as a person reads it (docs/search.md "Relevance"): strong ≥ 0.7, possible ≥ 0.4, weak below.
const BANDS = [[0.7, "strong"], [0.4, "possible"], [0, "weak"]];
function relevanceOf(hit) {
  const band = BANDS.find(([floor]) => hit.relevance >= floor)[1];
  const span = el("span", "relevance band-" + band);
  const bar = el("span", "bar");
  bar.style.setProperty("--share", Math.round(hit.relevance * 100) + "%");
  span.append(bar, document.createTextNode(band + " · relevance " + hit.relevance.toFixed(2)));
  span.title = "fused score " + hit.score.toFixed(4);
  return span;
}

function render(data, explain, query) {
  const list = $("results");
  list.replaceChildren();
  for (const hit of data.results) {
    const li = el("li", "hit" + (hit.kind === "code" ? " code-hit" : ""));
    li.appendChild(el("h2", "", hit.title || hit.context || hit.path));
    const meta = el("p", "meta");
    meta.appendChild(citation(hit, data.roots));
    meta.appendChild(relevanceOf(hit));
    if (hit.kind && hit.kind !== "document" && hit.kind !== "code") meta.appendChild(el("span", "kind", hit.kind));
    li.appendChild(meta);
    // A relationship question's answer says how it was reached from the element the question names.
    if (hit.matched_via && hit.matched_via.path) li.appendChild(el("p", "via", "reached by " + hit.matched_via.path));
    li.appendChild(hit.kind === "code" ? codeBlock(hit, query) : excerpt(hit.text || "", query));
    // The file's other passages in this answer, folded.
    if (hit.also && hit.also.length) {
      const more = el("details", "also");
      more.appendChild(el("summary", "", hit.also.length + " more in this file"));
      const ul = el("ul");
      for (const name of hit.also) ul.appendChild(el("li", "", name));
      more.appendChild(ul);
      li.appendChild(more);
    }
    if (explain && hit.explain) {
      const dl = el("dl", "explain");
      for (const [arm, value] of Object.entries(hit.explain)) {
        dl.appendChild(el("dt", "", arm));
        dl.appendChild(el("dd", "", "rank " + value.rank + ", score " + value.score.toFixed(4)));
      }
      li.appendChild(dl);
    }
    list.appendChild(li);
  }
  const files = data.total_results;
  const parts = [files + " file" + (files === 1 ? "" : "s") + " (result" + (files === 1 ? "" : "s") + " by file)",
    data.search_mode, Math.round(data.search_duration_ms) + " ms"];
  const partial = data.search_mode.endsWith("-partial");
  const lexical = !partial && (data.search_mode === "lexical-only" || Boolean(data.degraded_reason));
  let text = parts.join(" · ");
  if (lexical) text += " — keywords only: " + (data.degraded_reason || "the vector arm is unavailable");
  if (partial) text += " — partly by meaning: " + data.degraded_reason;
  if (files && data.results[0].relevance < 0.4) text += " — nothing strong: the index may not hold the answer";
  setState(text, lexical || partial);
}

function filters() {
  const out = {};
  const value = (id) => $(id).value.trim();
  if (value("collection")) out.collection = value("collection");
  if (value("kind")) out.kind = [value("kind")];
  if (value("path")) out.path = value("path");
  const tags = value("tags").split(",").map((t) => t.trim()).filter(Boolean);
  if (tags.length) out.tags = tags;
  for (const id of ["date_from", "date_to"]) if (value(id)) out[id] = value(id);
  const metadata = {};
  for (const id of ["layer", "element_type"]) if (value(id)) metadata[id] = value(id);
  if (Object.keys(metadata).length) out.metadata = metadata;
  return out;
}

async function search(event) {
  if (event) event.preventDefault();
  const query = $("q").value.trim();
  if (!query) return;
  const explain = $("explain").checked;
  const args = { query, limit: 10, mode: $("mode").value, explain, filters: filters(), detail: "full", group_by: "file" };
  history.replaceState(null, "", "/?" + new URLSearchParams({ q: query }).toString());
  setState("Searching…");
  try {
    render(await api("search", args), explain, query);
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
  if (q) {
    $("q").value = q;
    search();
  }
} else {
  if (history.length > 1) $("back").addEventListener("click", (e) => { e.preventDefault(); history.back(); });
  showDocument();
}
