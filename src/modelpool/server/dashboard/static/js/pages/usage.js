// Usage (SPEC §14): spend per day and per route as two small SVG charts drawn here (no library), and
// the table of calls, tokens and cost grouped by pool, route, key or day — the figures of /admin/usage.

import { get } from "../api.js";
import { h, replace } from "../dom.js";
import { t } from "../i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const GROUPS = ["pool", "route", "key", "day"];

export function mount(root) {
  let alive = true;
  let by = "route";
  const load = async () => {
    try {
      const [days, routes, table] = await Promise.all([
        get("/admin/usage?group_by=day"),
        get("/admin/usage?group_by=route"),
        get(`/admin/usage?group_by=${by}`),
      ]);
      if (alive) render(root, days, routes, table, by, (next) => { by = next; load(); });
    } catch (err) {
      if (alive) replace(root, h("p", { class: "error" }, `${t("error")}: ${err.message}`));
    }
  };
  load();
  const timer = setInterval(load, 5000);
  return () => {
    alive = false;
    clearInterval(timer);
  };
}

export function usd(value) {
  return value >= 1 ? `$${value.toFixed(2)}` : `$${value.toFixed(6)}`;
}

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text; // text nodes only: a route name cannot inject markup
  return el;
}

// Vertical bars: spend per day, oldest first.
function dayChart(rows) {
  const width = 640, height = 200, pad = 28, gap = 4;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height + pad}`, class: "chart", id: "usage-day-chart", role: "img" });
  const max = Math.max(...rows.map((r) => r.cost_usd), 0);
  const slot = rows.length ? Math.min(64, (width - pad) / rows.length) : 0;
  rows.forEach((r, i) => {
    const bar = max > 0 ? (r.cost_usd / max) * (height - pad) : 0;
    const x = pad + i * slot + gap / 2;
    const rect = svg("rect", { x, y: height - bar, width: Math.max(1, slot - gap), height: bar, class: "bar",
      "data-day": r.day, "data-cost": r.cost_usd });
    rect.append(svg("title", {}, `${r.day}: ${usd(r.cost_usd)}`));
    chart.append(rect, svg("text", { x: x + (slot - gap) / 2, y: height + 16, "text-anchor": "middle", class: "axis" }, r.day.slice(5)));
  });
  chart.append(svg("text", { x: 0, y: 12, class: "axis" }, usd(max)));
  return chart;
}

// Horizontal bars: spend per route, biggest first.
function routeChart(rows) {
  const width = 640, line = 22, label = 240;
  const shown = rows.slice(0, 12);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${Math.max(line, shown.length * line)}`, class: "chart", id: "usage-route-chart", role: "img" });
  const max = Math.max(...shown.map((r) => r.cost_usd), 0);
  shown.forEach((r, i) => {
    const w = max > 0 ? (r.cost_usd / max) * (width - label - 90) : 0;
    const y = i * line;
    chart.append(
      svg("text", { x: 0, y: y + 15, class: "axis" }, r.route),
      svg("rect", { x: label, y: y + 4, width: Math.max(1, w), height: line - 8, class: "bar", "data-route": r.route, "data-cost": r.cost_usd }),
      svg("text", { x: label + w + 6, y: y + 15, class: "axis" }, usd(r.cost_usd)),
    );
  });
  return chart;
}

function render(root, days, routes, table, by, regroup) {
  const select = h("select", { id: "usage-group", onchange: (e) => regroup(e.target.value) },
    GROUPS.map((g) => h("option", { value: g, selected: g === by }, t(`us.by.${g}`))));
  select.value = by;
  const total = table.total;
  replace(root,
    h("div", { class: "card" },
      h("h2", {}, t("us.title")),
      h("p", { class: "muted" }, t("us.total", { calls: total.calls, cost: usd(total.cost_usd) })),
      h("h3", {}, t("us.perDay")),
      days.rows.length ? dayChart(days.rows) : h("p", { class: "muted", id: "usage-none" }, t("us.none")),
      h("h3", {}, t("us.perRoute")),
      routes.rows.length ? routeChart(routes.rows) : null),
    h("div", { class: "card" },
      h("label", {}, t("us.groupBy"), " ", select),
      h("table", { class: "table", id: "usage-table" },
        h("thead", {}, h("tr", {},
          h("th", {}, t(`us.by.${by}`)), h("th", { class: "num" }, t("us.calls")),
          h("th", { class: "num col-secondary" }, t("us.in")), h("th", { class: "num col-secondary" }, t("us.cached")),
          h("th", { class: "num col-secondary" }, t("us.out")), h("th", { class: "num" }, t("us.cost")))),
        h("tbody", {}, table.rows.map((r) => h("tr", { "data-name": r[by] },
          h("td", {}, h("code", {}, r[by])),
          h("td", { class: "num calls" }, r.calls),
          h("td", { class: "num col-secondary tokens-in" }, r.tokens_in,
            r.estimated ? h("span", { class: "muted estimated", title: t("us.estimated", { n: r.estimated }) }, " ≈") : null),
          h("td", { class: "num col-secondary" }, r.tokens_cached),
          h("td", { class: "num col-secondary" }, r.tokens_out),
          h("td", { class: "num cost", "data-cost": r.cost_usd }, usd(r.cost_usd))))))));
}
