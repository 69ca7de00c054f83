// Overview: pools with their routes and per-route state badges, the live period and the holiday card.

import { get } from "../api.js";
import { fmtMs, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";
import { holidayCard, periodCard } from "./cards.js";

export function mount(root) {
  let timer = null;
  let alive = true;
  const load = async () => {
    try {
      const [pools, status] = await Promise.all([get("/admin/pools"), get("/admin/status")]);
      if (alive) render(root, pools, status, load);
    } catch (err) {
      if (alive) replace(root, h("p", { class: "error" }, `${t("error")}: ${err.message}`));
    }
  };
  load();
  timer = setInterval(load, 5000);
  const off = onEvent((e) => {
    if (e.type === "switch" || e.type === "failure" || e.type === "served") load();
  });
  return () => {
    alive = false;
    clearInterval(timer);
    off();
  };
}

function render(root, pools, status, reload) {
  const problems = [];
  if (status.config_error) {
    problems.push(h("div", { class: "card error", id: "config-error" },
      h("h2", {}, t("ov.configError")), h("ul", {}, status.config_error.map((e) => h("li", {}, e)))));
  }
  if (status.warnings && status.warnings.length) {
    problems.push(h("div", { class: "card warning" },
      h("h2", {}, t("ov.warnings")), h("ul", {}, status.warnings.map((w) => h("li", {}, w)))));
  }
  replace(root,
    problems,
    h("div", { class: "grid" }, periodCard(status.period), holidayCard(status.calendar, reload)),
    h("div", { class: "card", id: "pools" },
      h("h2", {}, t("ov.pools"), " ", h("small", { class: "muted" }, `${t("ov.strategy")}: ${pools.strategy}`)),
      pools.pools.length ? pools.pools.map(poolBlock) : h("p", { class: "muted" }, t("ov.noPools"))),
  );
}

function poolBlock(pool) {
  const images = pool.routes.filter((r) => r.images).map((r) => r.route);
  const facts = [
    t(pool.routes.length === 1 ? "ov.nRoutes1" : "ov.nRoutes", { n: pool.routes.length }),
    `${t("ov.efforts")}: ${(pool.efforts || []).join(" / ") || "—"}`,
    pool.context_window ? `${t("ov.context")}: ${pool.context_window.toLocaleString()}` : null,
    images.length ? `${t("ov.imagesVia")}: ${images.join(", ")}` : t("ov.noImages"),
  ].filter(Boolean);
  return h("div", { class: "pool", "data-pool": pool.id },
    h("h3", {}, pool.name, pool.name !== pool.id ? h("small", { class: "muted" }, ` (${pool.id})`) : null),
    h("p", { class: "facts-line" }, facts.join(" · ")),
    h("table", { class: "table" },
      h("thead", {}, h("tr", {},
        h("th", {}, t("ov.route")), h("th", {}, t("ov.state")), h("th", { class: "col-secondary num" }, t("ov.ttft")),
        h("th", { class: "col-secondary num" }, t("ov.tps")), h("th", { class: "num" }, t("ov.success")),
        h("th", { class: "col-secondary" }, t("ov.lastError")))),
      h("tbody", {}, pool.routes.map(routeRow))));
}

function routeRow(r) {
  const label = r.mark ? `${t(`badge.${r.state}`)} · ${r.mark}` : t(`badge.${r.state}`);
  return h("tr", { "data-route": r.route },
    h("td", {}, h("span", { class: "provider" }, r.provider_name), " ", h("code", {}, r.model),
      r.images ? h("span", { class: "tag", title: t("ov.images") }, "🖼") : null),
    h("td", {}, h("span", { class: "badge", "data-state": r.state, "data-route": r.route }, label)),
    h("td", { class: "col-secondary num" }, fmtMs(r.ewma_ttft_ms)),
    h("td", { class: "col-secondary num" }, r.median_tps ?? "—"),
    h("td", { class: "num" }, `${r.successes}/${r.attempts}`),
    h("td", { class: "col-secondary" }, r.last_error_kind || ""));
}
