// Merged-groups editor (pool seed "Merging one model that has several provider ids"): one row per
// group with its selectors; saving replaces `pool.groups` in the dashboard layer, and the pools below
// show what the new groups produced.

import { get, put } from "../api.js";
import { h, replace } from "../dom.js";
import { t } from "../i18n.js";

export function groupsCard() {
  const card = h("div", { class: "card", id: "groups-card" }, h("h2", {}, t("se.groups")), h("p", { class: "muted" }, t("loading")));
  const load = async () => {
    try {
      render(card, await get("/admin/groups"));
    } catch (err) {
      replace(card, h("h2", {}, t("se.groups")), h("p", { class: "error" }, err.message));
    }
  };
  load();
  return card;
}

function render(card, report) {
  let groups = report.groups.map((g) => ({ ...g, models: g.models.join(", ") }));
  const status = h("span", { class: "status", role: "status" });
  const body = h("tbody");
  const draw = () => replace(body, groups.map((g, i) => h("tr", { "data-group": g.id || `#${i}` },
    h("td", {}, h("input", { class: "gid", value: g.id, "aria-label": t("se.gid"), oninput: (e) => { g.id = e.target.value; } })),
    h("td", {}, h("input", { class: "gname", value: g.name || "", "aria-label": t("se.gname"), oninput: (e) => { g.name = e.target.value; } })),
    h("td", {}, h("input", { class: "gmodels wide", value: g.models, "aria-label": t("se.gmodels"), oninput: (e) => { g.models = e.target.value; } })),
    h("td", {}, h("input", { type: "checkbox", class: "gmerge", checked: g.merge, "aria-label": t("se.gmerge"), onchange: (e) => { g.merge = e.target.checked; } })),
    h("td", {}, h("button", { type: "button", class: "remove", onclick: () => { groups.splice(i, 1); draw(); } }, "×")))));
  const send = async (payload) => {
    status.textContent = "…";
    try {
      render(card, await put("/admin/groups", { groups: payload }));
    } catch (err) {
      status.textContent = `${t("error")}: ${err.message}`;
    }
  };
  const save = () => send(groups.map((g) => ({
    id: g.id.trim(),
    name: (g.name || "").trim() || null,
    models: g.models.split(",").map((s) => s.trim()).filter(Boolean),
    merge: Boolean(g.merge),
  })));
  draw();
  replace(card,
    h("h2", {}, t("se.groups"), " ", h("span", { class: "layer", "data-layer": report.layer }, t(`layer.${report.layer}`))),
    h("p", { class: "muted" }, t("se.groupsHint")),
    h("table", { class: "table groups" },
      h("thead", {}, h("tr", {}, h("th", {}, t("se.gid")), h("th", {}, t("se.gname")), h("th", {}, t("se.gmodels")),
        h("th", {}, t("se.gmerge")), h("th", {}))),
      body),
    h("div", { class: "actions" },
      h("button", { type: "button", id: "group-add", onclick: () => { groups.push({ id: "", name: "", models: "", merge: true }); draw(); } }, t("se.addGroup")),
      h("button", { type: "button", class: "primary", id: "groups-save", onclick: save }, t("se.saveGroups")),
      report.layer === "dashboard" ? h("button", { type: "button", id: "groups-reset", title: t("se.resetHint"), onclick: () => send(null) }, t("se.reset")) : null,
      status),
    h("ul", { class: "pools-preview" }, report.pools.map((p) => h("li", { "data-pool": p.id },
      h("strong", {}, p.name), p.name !== p.id ? ` (${p.id})` : "", ": ", p.routes.join(", ")))));
}
