// Models roster (rotator seed "The model list"): two sections (chat channels, vision twins), three
// independent fold levels (the roster, each section, each channel), expand/collapse all, and a switch
// per channel and per row. Tallies come from /admin/models, which derives them from the rows.
//
// Sized for a real machine's roster (906 rows in the seed's live scan, issue #21): the DOM is built once
// and then changed in place. A fold flips the `hidden` of one fold body (never a rebuild), one click
// listener on the roster serves every button, and a refresh rebuilds only the channels whose rows
// changed. Rows off screen skip layout and paint (`content-visibility: auto` in app.css). One module for
// the whole page: a second one would be one more round trip before the roster can even be fetched.

import { get, post } from "../api.js";
import { fmtDuration, fmtMs, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";

// Fold state lives for the page's lifetime in this module, so a refresh or a switch never re-folds what
// the reader opened. Chat channels start open; the vision section starts closed (it is as long as
// everything else and none of it is ever a candidate).
const folds = { roster: true, sections: { chat: true, vision: false }, channels: {} };

function channelOpen(channel) {
  if (!(channel.id in folds.channels)) folds.channels[channel.id] = channel.kind === "chat";
  return folds.channels[channel.id];
}

function foldOpen(kind, id) {
  if (kind === "roster") return folds.roster;
  if (kind === "section") return folds.sections[id] ?? id === "chat";
  return Boolean(folds.channels[id]);
}

export function mount(root) {
  let alive = true;
  let data = null;
  let lastJson = "";
  let busy = false;
  const status = h("p", { class: "status", id: "roster-status", role: "status" });
  const body = h("div", { id: "roster-root", onclick: onClick });

  const accept = (next) => {
    const json = JSON.stringify(next);
    if (json === lastJson) return; // unchanged: keep the DOM (and whatever the pointer is on) as it is
    lastJson = json;
    const prev = data;
    data = next;
    if (!prev || !patch(body, prev, next)) replace(body, rosterView(next));
  };
  const load = async () => {
    if (busy) return;
    try {
      const next = await get("/admin/models");
      if (alive && !busy) accept(next);
    } catch (err) {
      if (alive) status.textContent = `${t("error")}: ${err.message}`;
    }
  };

  // One listener for every fold and switch button: a row carries no closure of its own.
  function onClick(event) {
    const button = event.target.closest("button");
    if (!button || !data) return;
    if (button.dataset.fold) toggle(button);
    else if (button.dataset.enable) flip(button.dataset.key, button.dataset.enable === "true", button.dataset.scope);
  }
  function toggle(button) {
    const [kind, id] = button.dataset.fold.split(/:(.*)/s);
    if (kind === "roster") folds.roster = !folds.roster;
    else if (kind === "section") folds.sections[id] = !foldOpen("section", id);
    else folds.channels[id] = !foldOpen("channel", id);
    showFold(button, foldOpen(kind, id));
  }
  function setAll(open) {
    if (!data) return;
    if (open) folds.roster = true;
    for (const key of Object.keys(folds.sections)) folds.sections[key] = open;
    for (const channel of data.channels) folds.channels[channel.id] = open;
    for (const button of body.querySelectorAll("button.fold")) {
      const [kind, id] = button.dataset.fold.split(/:(.*)/s);
      showFold(button, foldOpen(kind, id));
    }
  }
  async function flip(key, enabled, scope) {
    busy = true;
    status.textContent = "…";
    const locked = [...body.querySelectorAll("button.switch-btn:not(:disabled)")];
    for (const b of locked) b.disabled = true;
    try {
      const next = await post("/admin/models", { key, enabled, scope });
      status.textContent = t("saved");
      accept(next);
    } catch (err) {
      status.textContent = `${t("error")}: ${err.message}`;
    } finally {
      for (const b of locked) if (b.isConnected) b.disabled = false; // rebuilt ones came back enabled
      busy = false;
    }
  }

  replace(root,
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "expand-all", onclick: () => setAll(true) }, t("ro.expandAll")),
      h("button", { type: "button", id: "collapse-all", onclick: () => setAll(false) }, t("ro.collapseAll")),
      status),
    body);
  load();
  const timer = setInterval(load, 5000);
  const off = onEvent((e) => {
    if (e.type === "switch" || e.type === "failure" || e.type === "served") load();
  });
  return () => {
    alive = false;
    clearInterval(timer);
    off();
  };
}

// A fold shows or hides its own body and relabels its button; nothing else on the page is touched.
function showFold(button, open) {
  const box = button.closest("[data-open]");
  box.dataset.open = String(open);
  button.setAttribute("aria-expanded", String(open));
  button.firstElementChild.textContent = open ? "▼" : "▶";
  box.querySelector(":scope > .fold-body").hidden = !open;
}

// The same sections, channels and rows in the same order (the usual refresh: states and timings moved)
// are patched: a channel whose own entry or any row changed is rebuilt, the section and roster tallies
// are redrawn, the rest stays. Anything else is a new roster (false: the caller rebuilds).
function patch(body, prev, next) {
  if (shape(prev) !== shape(next)) return false;
  const before = rowsByChannel(prev);
  const after = rowsByChannel(next);
  next.channels.forEach((c, i) => {
    const rows = after[c.id] || [];
    if (JSON.stringify([prev.channels[i], before[c.id] || []]) === JSON.stringify([c, rows])) return;
    body.querySelector(`.channel[data-channel="${CSS.escape(c.id)}"]`).replaceWith(channelView(c, rows));
  });
  for (const group of next.groups) {
    const section = body.querySelector(`.section[data-section="${CSS.escape(group.id)}"]`);
    section.querySelector(":scope > .fold-head > .tally").replaceWith(tally(group)); // focus stays put
  }
  const roster = body.querySelector(".roster");
  roster.querySelector(":scope > .fold-head > .tally").replaceWith(tally(next.totals));
  if (JSON.stringify(prev.lists) !== JSON.stringify(next.lists)) {
    const lists = roster.querySelector(":scope > .fold-body > .lists");
    const open = lists.open;
    lists.replaceWith(listsView(next.lists, open));
  }
  return true;
}

function shape(data) {
  const channels = data.channels.map((c) => c.id);
  return JSON.stringify([channels, data.groups.map((g) => [g.id, g.channels]), data.models.map((r) => r.key)]);
}

// --- the elements ------------------------------------------------------------------------------------
// Buttons carry what a click needs as data attributes — `data-fold` ("roster", "section:ID",
// "channel:ID") or `data-key` / `data-enable` / `data-scope` for a switch — so no element holds a
// listener of its own and a refresh can swap any part without rewiring it.

function rowsByChannel(data) {
  const rows = {};
  for (const row of data.models) (rows[row.channel] ||= []).push(row);
  return rows;
}

function tally(counts) {
  return h("span", { class: "tally" }, t(counts.models === 1 ? "ro.tally1" : "ro.tally", counts));
}

function foldButton(open, fold, label) {
  return h("button", { type: "button", class: "fold", "data-fold": fold, "aria-expanded": String(open) },
    h("span", { class: "chev" }, open ? "▼" : "▶"), " ", label);
}

function rosterView(data) {
  const byId = Object.fromEntries(data.channels.map((c) => [c.id, c]));
  const rowsOf = rowsByChannel(data);
  const sections = data.groups.map((group) => {
    const open = foldOpen("section", group.id);
    return h("div", { class: "section", "data-section": group.id, "data-open": String(open) },
      sectionHead(group),
      h("div", { class: "fold-body", hidden: !open },
        group.channels.map((id) => channelView(byId[id], rowsOf[id] || []))));
  });
  return h("div", { class: "roster card", "data-open": String(folds.roster) },
    h("div", { class: "fold-head roster-head" }, foldButton(folds.roster, "roster", t("ro.title")),
      tally(data.totals)),
    h("div", { class: "fold-body", hidden: !folds.roster }, sections, listsView(data.lists, false)));
}

function sectionHead(group) {
  const open = foldOpen("section", group.id);
  return h("div", { class: "fold-head section-head" },
    foldButton(open, `section:${group.id}`, t(`ro.section.${group.id}`)), tally(group));
}

function channelView(c, rows) {
  const open = channelOpen(c);
  const label = c.sourceChannel ? `${c.label} · ${t("ro.wraps", { source: c.sourceChannel })}` : c.label;
  // The header button follows the channel's own flag, never its rows' states (seed rule 1); a vision
  // channel gets no button at all (rule 4).
  const button = c.switchable
    ? h("button", {
      type: "button", class: "switch-btn channel-switch", "data-channel": c.id,
      "data-key": c.id, "data-enable": String(c.closed), "data-scope": "provider",
    }, t(c.closed ? "ro.openChannel" : "ro.closeChannel"))
    : null;
  return h("div", { class: "channel", "data-channel": c.id, "data-kind": c.kind, "data-closed": String(c.closed),
    "data-open": String(open) },
  h("div", { class: "fold-head channel-head" }, foldButton(open, `channel:${c.id}`, label),
    c.closed ? h("span", { class: "tag closed" }, t("ro.closedTag")) : null, tally(c), button),
  h("ul", { class: "fold-body rows", hidden: !open },
    rows.length ? rows.map(rowView) : h("li", { class: "muted" }, t("ro.noRows"))));
}

function detail(r) {
  const counts = { ok: r.successes, n: r.attempts };
  switch (r.state) {
    case "off": return t(`why.${r.reason}`);
    case "untested": return t("ro.detail.never");
    case "cooling":
    case "quota": return t("ro.detail.rest", { left: fmtDuration(r.rest_remaining), kind: r.last_error_kind || "?" });
    case "failing": return t("ro.detail.failed", { kind: r.last_error_kind || "?", ...counts });
    default: return r.ttft_ms === null ? `${r.successes}/${r.attempts}` : t("ro.detail.ttft", { ttft: fmtMs(r.ttft_ms), ...counts });
  }
}

// Rows are the bulk of the page (906 on the seed's machine): each is a clone of one prototype filled in
// place, rather than six elements built and classed one by one.
let rowPrototype = null;

function rowView(r) {
  rowPrototype ||= h("li", { class: "row" }, h("span", { class: "dot" }), h("span", { class: "state-word" }),
    h("code", { class: "model" }), h("span", { class: "detail" }),
    h("button", { type: "button", class: "switch-btn row-switch", "data-scope": "model" }));
  const li = rowPrototype.cloneNode(true);
  const [dot, word, model, text, button] = li.children;
  li.setAttribute("data-route", r.key); // setAttribute: a little cheaper than `dataset` at this count
  li.setAttribute("data-state", r.state);
  li.setAttribute("data-reason", r.reason || "");
  dot.setAttribute("data-state", r.state);
  word.textContent = t(`st.${r.state}`);
  model.textContent = r.model;
  text.textContent = detail(r);
  button.setAttribute("data-route", r.key);
  button.setAttribute("data-key", r.key);
  button.setAttribute("data-enable", String(!r.on));
  button.textContent = t(r.on ? "ro.switchOff" : "ro.switchOn");
  if (!r.switchable) {
    button.disabled = true;
    button.title = t(`why.${r.reason}`);
  }
  return li;
}

function listsView(data, open) {
  return h("details", { class: "lists", open },
    h("summary", {}, t("ro.lists")),
    h("dl", { class: "facts" }, Object.entries(data).map(([key, v]) => [
      h("dt", {}, key, " ", h("span", { class: "layer", "data-layer": v.layer }, t(`layer.${v.layer}`))),
      h("dd", {}, v.value.length ? v.value.join(", ") : "—"),
    ])));
}
