// Sessions: the live route of each conversation (pool seed "Seeing the live route") with its calls, tokens
// and cost so far; `#/sessions?id=…` is one session's own page — its calls with route, attempts, switches,
// hedges, tokens, cost, time to first token and outcome, the way an agent run is read afterwards.

import { get } from "../api.js";
import { fmtMs, fmtTime, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";
import { usd } from "./usage.js";

function sessionParam() {
  const query = (window.location.hash || "").split("?")[1] || "";
  return new URLSearchParams(query).get("id");
}

export function mount(root) {
  let alive = true;
  const sid = sessionParam();
  const load = async () => {
    try {
      if (sid === null) {
        const data = await get("/admin/sessions");
        if (alive) renderList(root, data.sessions);
      } else {
        const data = await get(`/admin/sessions/${encodeURIComponent(sid)}`).catch((err) => {
          if (err.status === 404) return null;
          throw err;
        });
        if (alive) renderSession(root, sid, data);
      }
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

const link = (sid) => `#/sessions?id=${encodeURIComponent(sid)}`;
const num = (v) => (typeof v === "number" ? v.toLocaleString() : "—");

function renderList(root, sessions) {
  replace(root, h("div", { class: "card" },
    h("h2", {}, t("ss.title")),
    sessions.length === 0
      ? h("p", { class: "muted", id: "sessions-none" }, t("ss.none"))
      : h("table", { class: "table fit", id: "sessions-table" },
        h("colgroup", {},
          h("col", { class: "c-session" }), h("col", { class: "c-route" }), h("col", { class: "c-model col-secondary" }),
          h("col", { class: "c-effort col-secondary" }), h("col", { class: "c-pool col-secondary" }), h("col", { class: "c-calls" }),
          h("col", { class: "c-cost" }), h("col", { class: "c-at col-secondary" })),
        h("thead", {}, h("tr", {},
          h("th", {}, t("ss.session")), h("th", {}, t("ss.provider")), h("th", { class: "col-secondary" }, t("ss.model")),
          h("th", { class: "col-secondary" }, t("ss.effort")), h("th", { class: "col-secondary" }, t("ss.pool")),
          h("th", { class: "num" }, t("ss.calls")), h("th", { class: "num" }, t("ss.cost")),
          h("th", { class: "col-secondary" }, t("ss.last")))),
        h("tbody", {}, sessions.map((s) => h("tr", { "data-session": s.session, "data-route": s.route || s.last_route || "" },
          h("td", { class: "sid" }, h("a", { href: link(s.session), title: s.session }, h("code", {}, s.session))),
          h("td", { class: "provider" }, s.provider_name
            ? [s.provider_name, s.provider_name !== s.provider ? h("small", { class: "muted" }, ` (${s.provider})`) : null]
            : h("code", {}, s.last_route || "—")),
          h("td", { class: "model col-secondary" }, h("code", {}, s.model || "—")),
          h("td", { class: "effort col-secondary" }, s.effort || "—"),
          h("td", { class: "pool col-secondary" }, s.pool || "—"),
          h("td", { class: "num calls" }, num(s.calls)),
          h("td", { class: "num cost", "data-cost": s.cost_usd ?? "" }, s.cost_usd === undefined ? "—" : usd(s.cost_usd)),
          h("td", { class: "col-secondary" }, fmtTime(s.last_at || s.at))))))));
}

function attemptsText(c) {
  return c.attempts.map((a) => (a.kind ? `${a.route} (${a.kind})` : a.route)).join(" → ") || "—";
}

function renderSession(root, sid, data) {
  const back = h("p", {}, h("a", { href: "#/sessions", id: "session-back" }, `← ${t("ss.back")}`));
  if (data === null) {
    replace(root, h("div", { class: "card" }, back, h("h2", { class: "sid-title" }, h("code", {}, sid)),
      h("p", { class: "muted", id: "session-unknown" }, t("ss.unknown"))));
    return;
  }
  const s = data.summary;
  const live = data.live_route;
  const calls = [...data.calls].reverse(); // newest first
  replace(root,
    h("div", { class: "card", id: "session-page", "data-session": sid }, back,
      h("h2", { class: "sid-title" }, h("code", {}, sid)),
      s ? h("p", { id: "session-summary" }, t("ss.summary", {
        calls: s.calls, failed: s.failed, tin: num(s.tokens_in), tout: num(s.tokens_out), cost: usd(s.cost_usd) })) : null,
      live ? h("p", { class: "muted", id: "session-live" }, `${t("ss.liveRoute")}: `, h("code", {}, live.route),
        live.effort ? ` · ${live.effort}` : "") : null),
    h("div", { class: "card" },
      h("h3", {}, t("ss.callsTitle")),
      h("p", { class: "muted" }, t("ss.kept", { n: data.calls_kept })),
      calls.length === 0 ? h("p", { class: "muted", id: "session-no-calls" }, t("ss.noCalls"))
        : h("table", { class: "table wrap", id: "session-calls" },
          h("thead", {}, h("tr", {},
            h("th", { class: "col-secondary" }, t("ss.time")), h("th", {}, t("ss.route")),
            h("th", { class: "col-secondary" }, t("ss.attemptsCol")), h("th", { class: "col-secondary" }, t("ss.switches")),
            h("th", { class: "col-secondary" }, t("ss.hedged")),
            h("th", { class: "num" }, t("ss.in")), h("th", { class: "num" }, t("ss.out")), h("th", { class: "num" }, t("ss.cost")),
            h("th", { class: "num col-secondary" }, t("ss.ttft")), h("th", { class: "num col-secondary" }, t("ss.latency")),
            h("th", {}, t("ss.outcome")))),
          h("tbody", {}, calls.map((c) => h("tr", { class: "call", "data-request": c.request_id, "data-outcome": c.outcome },
            h("td", { class: "col-secondary" }, fmtTime(c.at)),
            h("td", { class: "route" }, h("code", {}, c.route || "—"), c.purpose ? h("span", { class: "tag" }, c.purpose) : null),
            h("td", { class: "attempts col-secondary" }, attemptsText(c)),
            h("td", { class: "switches col-secondary" }, (c.switches || []).map((w) => `${w.from} → ${w.to} (${w.kind})`).join(", ") || "—"),
            h("td", { class: "hedged col-secondary" }, c.hedged || "—"),
            h("td", { class: "num tokens-in" }, num(c.tokens_in)),
            h("td", { class: "num tokens-out" }, num(c.tokens_out)),
            h("td", { class: "num cost", "data-cost": c.cost_usd ?? "" }, c.cost_usd === null ? "—" : usd(c.cost_usd)),
            h("td", { class: "num ttft col-secondary" }, fmtMs(c.ttft_ms)),
            h("td", { class: "num latency col-secondary" }, fmtMs(c.latency_ms)),
            h("td", { class: "outcome" }, c.outcome)))))));
}
