// Aggregator ranking (fastcel seeds): inner providers fastest first with tok/s, TTFT, uptime, the
// first-party mark and demotion reasons, plus the served-by line. It follows replies live: every
// switch/failure/served event and a short poll reload it.

import { get, post } from "../api.js";
import { fmtDuration, fmtMs, fmtTime, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";

const AGGREGATORS = new Set(["vercel", "openrouter"]);
let chosen = null; // kept while the app is open, so coming back shows the same model

export function mount(root) {
  let alive = true;
  let routes = [];
  const picker = h("select", { id: "ranking-model", "aria-label": t("rk.model") });
  const panel = h("div", { id: "ranking-panel" }, h("p", { class: "muted" }, t("loading")));
  const refresh = h("button", { type: "button", id: "ranking-refresh" }, t("rk.refresh"));

  const load = async () => {
    if (!chosen) return;
    try {
      const report = await get(`/admin/ranking/${chosen.split("/").map(encodeURIComponent).join("/")}`);
      if (alive) replace(panel, render(report));
    } catch (err) {
      if (alive) replace(panel, h("p", { class: "error" }, `${t("error")}: ${err.message}`));
    }
  };
  picker.addEventListener("change", () => {
    chosen = picker.value;
    load();
  });
  refresh.addEventListener("click", async () => {
    refresh.disabled = true;
    try {
      await post("/admin/ranking/refresh", { model: chosen });
      await load();
    } finally {
      refresh.disabled = false;
    }
  });

  (async () => {
    try {
      const roster = await get("/admin/models");
      const kinds = Object.fromEntries(roster.channels.map((c) => [c.id, c.provider_kind]));
      routes = roster.models.filter((m) => AGGREGATORS.has(kinds[m.channel]) && m.reason !== "non-chat");
    } catch (err) {
      replace(panel, h("p", { class: "error" }, `${t("error")}: ${err.message}`));
      return;
    }
    if (!alive) return;
    if (!routes.length) {
      replace(root, h("div", { class: "card" }, h("h2", {}, t("rk.title")), h("p", { class: "muted", id: "ranking-none" }, t("rk.none"))));
      return;
    }
    if (!routes.some((r) => r.key === chosen)) chosen = routes[0].key;
    replace(picker, routes.map((r) => h("option", { value: r.key }, r.key)));
    picker.value = chosen;
    load();
  })();

  replace(root, h("div", { class: "card" },
    h("h2", {}, t("rk.title")),
    h("div", { class: "toolbar" }, h("label", { for: "ranking-model" }, t("rk.model")), picker, refresh),
    panel));
  const timer = setInterval(load, 4000);
  const off = onEvent((e) => {
    if (["switch", "failure", "served"].includes(e.type)) load();
  });
  return () => {
    alive = false;
    clearInterval(timer);
    off();
  };
}

function render(report) {
  const head = [];
  if (!report.available) head.push(h("p", { class: "warning" }, t("rk.unavailable", { error: report.error || "?" })));
  else if (report.stats_age_s !== null) head.push(h("p", { class: "muted" }, t("rk.stats", { age: fmtDuration(report.stats_age_s) })));
  return [
    head,
    servedBy(report.served_by),
    h("table", { class: "table", id: "ranking-table" },
      h("thead", {}, h("tr", {},
        h("th", {}, "#"), h("th", {}, t("rk.provider")), h("th", { class: "num" }, t("rk.tps")),
        h("th", { class: "num col-secondary" }, t("rk.ttft")), h("th", { class: "num col-secondary" }, t("rk.uptime")),
        h("th", {}, t("rk.notes")))),
      h("tbody", {}, report.rows.map((row, i) => h("tr", {
        "data-provider": row.provider, class: row.demoted.length ? "demoted" : null,
      },
      h("td", { class: "num" }, i + 1),
      h("td", {}, row.name || row.provider, row.first_party ? h("span", { class: "tag first-party" }, t("rk.firstParty")) : null),
      h("td", { class: "num" }, row.tps ?? "—"),
      h("td", { class: "num col-secondary" }, fmtMs(row.ttft_ms)),
      h("td", { class: "num col-secondary" }, row.uptime_15m === null ? "—" : `${row.uptime_15m}%`),
      h("td", {}, row.demoted.join("; ") || (row.tps === null ? row.notes : "")))))),
  ];
}

function servedBy(served) {
  if (!served) return h("p", { class: "served-by muted", id: "served-by" }, t("rk.noServed"));
  const affinity = served.affinity || {};
  return h("p", { class: "served-by", id: "served-by", "data-provider": served.provider || "" },
    h("strong", {}, `${t("rk.servedBy")}: `), h("span", { class: "provider" }, served.provider || "?"),
    ` · ${t("rk.session")} `, h("code", {}, served.session),
    affinity.sentence ? ` · ${affinity.sentence}` : "",
    ` · ${t("rk.updated", { time: fmtTime(served.at) })}`);
}
