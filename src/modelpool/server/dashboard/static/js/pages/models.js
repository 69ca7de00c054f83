// Models roster (rotator seed "The model list"): two sections (chat channels, vision twins), three
// independent fold levels (the roster, each section, each channel), expand/collapse all, and a switch
// per channel and per row. Tallies come from /admin/models, which derives them from the rows.

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

export function mount(root) {
  let alive = true;
  let data = null;
  let lastJson = "";
  let busy = false;
  const status = h("p", { class: "status", id: "roster-status", role: "status" });
  const body = h("div", { id: "roster-root" });

  const draw = () => data && replace(body, roster(data, { toggle, flip, setAll }));
  const accept = (next) => {
    const json = JSON.stringify(next);
    if (json === lastJson) return; // unchanged: keep the DOM (and whatever the pointer is on) as it is
    lastJson = json;
    data = next;
    draw();
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
  function toggle(kind, id) {
    if (kind === "roster") folds.roster = !folds.roster;
    else if (kind === "section") folds.sections[id] = !folds.sections[id];
    else folds.channels[id] = !channelOpen({ id, kind: "chat" });
    draw();
  }
  function setAll(open) {
    if (open) folds.roster = true;
    for (const key of Object.keys(folds.sections)) folds.sections[key] = open;
    for (const channel of data.channels) folds.channels[channel.id] = open;
    draw();
  }
  async function flip(key, enabled, scope) {
    busy = true;
    status.textContent = "…";
    for (const b of body.querySelectorAll("button.switch-btn")) b.disabled = true;
    try {
      const next = await post("/admin/models", { key, enabled, scope });
      status.textContent = t("saved");
      lastJson = "";
      accept(next);
    } catch (err) {
      status.textContent = `${t("error")}: ${err.message}`;
      draw();
    } finally {
      busy = false;
    }
  }

  replace(root,
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "expand-all", onclick: () => data && setAll(true) }, t("ro.expandAll")),
      h("button", { type: "button", id: "collapse-all", onclick: () => data && setAll(false) }, t("ro.collapseAll")),
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

function tally(counts) {
  return h("span", { class: "tally" }, t(counts.models === 1 ? "ro.tally1" : "ro.tally", counts));
}

function foldButton(open, kind, id, label, actions) {
  return h("button", {
    type: "button", class: "fold", "data-fold": id ? `${kind}:${id}` : kind,
    "aria-expanded": String(open), onclick: () => actions.toggle(kind, id),
  }, h("span", { class: "chev" }, open ? "▼" : "▶"), " ", label);
}

function roster(data, actions) {
  const byId = Object.fromEntries(data.channels.map((c) => [c.id, c]));
  const rowsOf = {};
  for (const row of data.models) (rowsOf[row.channel] ||= []).push(row);
  const sections = data.groups.map((group) => {
    const open = folds.sections[group.id] ?? group.id === "chat";
    return h("div", { class: "section", "data-section": group.id, "data-open": String(open) },
      h("div", { class: "fold-head section-head" },
        foldButton(open, "section", group.id, t(`ro.section.${group.id}`), actions), tally(group)),
      h("div", { class: "fold-body", hidden: !open },
        group.channels.map((id) => channel(byId[id], rowsOf[id] || [], actions))));
  });
  return h("div", { class: "roster card", "data-open": String(folds.roster) },
    h("div", { class: "fold-head roster-head" }, foldButton(folds.roster, "roster", null, t("ro.title"), actions),
      tally(data.totals)),
    h("div", { class: "fold-body", hidden: !folds.roster }, sections, lists(data.lists)));
}

function channel(c, rows, actions) {
  const open = channelOpen(c);
  const label = c.sourceChannel ? `${c.label} · ${t("ro.wraps", { source: c.sourceChannel })}` : c.label;
  // The header button follows the channel's own flag, never its rows' states (seed rule 1); a vision
  // channel gets no button at all (rule 4).
  const button = c.switchable
    ? h("button", {
      type: "button", class: "switch-btn channel-switch", "data-channel": c.id,
      onclick: () => actions.flip(c.id, c.closed, "provider"),
    }, t(c.closed ? "ro.openChannel" : "ro.closeChannel"))
    : null;
  return h("div", { class: "channel", "data-channel": c.id, "data-kind": c.kind, "data-closed": String(c.closed),
    "data-open": String(open) },
  h("div", { class: "fold-head channel-head" }, foldButton(open, "channel", c.id, label, actions),
    c.closed ? h("span", { class: "tag closed" }, t("ro.closedTag")) : null, tally(c), button),
  h("ul", { class: "fold-body rows", hidden: !open },
    rows.length ? rows.map((r) => row(r, actions)) : h("li", { class: "muted" }, t("ro.noRows"))));
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

function row(r, actions) {
  const button = h("button", {
    type: "button", class: "switch-btn row-switch", "data-route": r.key, disabled: !r.switchable,
    title: r.switchable ? null : t(`why.${r.reason}`), onclick: () => actions.flip(r.key, !r.on, "model"),
  }, t(r.on ? "ro.switchOff" : "ro.switchOn"));
  return h("li", { class: "row", "data-route": r.key, "data-state": r.state, "data-reason": r.reason || "" },
    h("span", { class: "dot", "data-state": r.state }),
    h("span", { class: "state-word" }, t(`st.${r.state}`)),
    h("code", { class: "model" }, r.model),
    h("span", { class: "detail" }, detail(r)),
    button);
}

function lists(data) {
  return h("details", { class: "lists" },
    h("summary", {}, t("ro.lists")),
    h("dl", { class: "facts" }, Object.entries(data).map(([key, v]) => [
      h("dt", {}, key, " ", h("span", { class: "layer", "data-layer": v.layer }, t(`layer.${v.layer}`))),
      h("dd", {}, v.value.length ? v.value.join(", ") : "—"),
    ])));
}
