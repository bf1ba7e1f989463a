// retrievo's search page and document view. The answer's and the document's HTML come escaped (and the
// document sanitised) from the server; everything else is set with textContent (no HTML from data).
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

// The document is rendered by the server (the same HTML the view gets without its script) and swapped in.
async function openDocument(event) {
  if (event) event.preventDefault();
  const typed = $("key").value.trim();
  if (typed) sessionStorage.setItem(KEY, typed);
  const args = {};
  for (const node of $("view-form").elements) if (node.name && node.name !== "key") args[node.name] = node.value;
  setState("Opening the document…");
  try {
    const found = await api("page/document", args);
    $("title").textContent = found.title;
    $("where").innerHTML = found.where; // escaped by the server (surfaces/http/view.py)
    $("document").innerHTML = found.document; // rendered and sanitised by the server (document_html.py)
    $("view-form").hidden = true;
    setState(found.state);
    showHit();
  } catch (error) {
    setState(error.message, true);
  }
}

function showHit() {
  const hit = $("hit");
  if (!hit) return;
  hit.scrollIntoView({ block: "center" });
  $("doc").focus({ preventScroll: true });
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
  $("view-form").addEventListener("submit", openDocument);
  if (document.querySelector("main").dataset.rendered === "yes") showHit();
  else if (key()) openDocument();
}
