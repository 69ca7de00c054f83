// Sessions: the live route of each conversation (pool seed "Seeing the live route"): the provider that
// produced the answer, that provider's own model id, the effort actually used, and the pool.

import { get } from "../api.js";
import { fmtTime, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";

export function mount(root) {
  let alive = true;
  const load = async () => {
    try {
      const data = await get("/admin/sessions");
      if (alive) render(root, data.sessions);
    } catch (err) {
      if (alive) replace(root, h("p", { class: "error" }, `${t("error")}: ${err.message}`));
    }
  };
  load();
  const timer = setInterval(load, 3000);
  const off = onEvent((e) => {
    if (["switch", "served", "pin"].includes(e.type)) load();
  });
  return () => {
    alive = false;
    clearInterval(timer);
    off();
  };
}

function render(root, sessions) {
  replace(root, h("div", { class: "card" },
    h("h2", {}, t("ss.title")),
    sessions.length === 0
      ? h("p", { class: "muted", id: "sessions-none" }, t("ss.none"))
      : h("table", { class: "table", id: "sessions-table" },
        h("thead", {}, h("tr", {},
          h("th", {}, t("ss.session")), h("th", {}, t("ss.provider")), h("th", {}, t("ss.model")),
          h("th", {}, t("ss.effort")), h("th", {}, t("ss.pool")), h("th", { class: "num col-secondary" }, t("ss.attempts")),
          h("th", { class: "col-secondary" }, t("ss.from")), h("th", { class: "col-secondary" }, t("ss.at")))),
        h("tbody", {}, sessions.map((s) => h("tr", { "data-session": s.session, "data-route": s.route },
          h("td", {}, h("code", {}, s.session)),
          h("td", { class: "provider" }, s.provider_name, s.provider_name !== s.provider ? h("small", { class: "muted" }, ` (${s.provider})`) : null),
          h("td", { class: "model" }, h("code", {}, s.model)),
          h("td", { class: "effort" }, s.effort || "—"),
          h("td", { class: "pool" }, s.pool),
          h("td", { class: "num col-secondary" }, s.attempts),
          h("td", { class: "col-secondary" }, s.switched_from || ""),
          h("td", { class: "col-secondary" }, fmtTime(s.at))))))));
}
