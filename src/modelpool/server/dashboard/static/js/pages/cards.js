// Cards shared by Overview and Settings: the live period and the statutory-holiday calendar.

import { patch, post } from "../api.js";
import { fmtZoned, h } from "../dom.js";
import { t } from "../i18n.js";

export function periodCard(period) {
  const peak = period.peak;
  const rows = [
    [t("period.now"), h("span", { class: `period ${peak ? "peak" : "idle"}`, id: "period-now" },
      t(peak ? "period.peak" : "period.idle"))],
    [t("period.local"), `${period.local_date || ""} ${period.local_time || ""} (${period.time_zone})`],
    [t("period.windows"), (period.windows || []).join(", ") || "—"],
    [t("period.why"), period.why || "—"],
    [t("period.next"), period.next_flip ? `${fmtZoned(period.next_flip)} → ${t(`period.${period.next_period}`)}` : "—"],
  ];
  return h("div", { class: "card", id: "period-card" },
    h("h2", {}, t("period.title")),
    period.enabled === false ? h("p", { class: "muted" }, t("period.off")) : null,
    dl(rows),
    (period.warnings || []).map((w) => h("p", { class: "warning" }, w)),
  );
}

export function holidayCard(cal, onChange) {
  const status = cal.status || "not synced";
  const counts = cal.not_published_yet
    ? [[t("hol.holidays"), t("hol.notPublished")]]
    : [[t("hol.holidays"), cal.holidays ?? "—"], [t("hol.makeup"), cal.makeup_workdays ?? "—"]];
  const auto = h("input", { type: "checkbox", id: "holiday-auto", checked: cal.auto_update });
  auto.addEventListener("change", async () => {
    auto.disabled = true;
    try {
      await patch("/admin/settings", { "holidays.sync": auto.checked });
      onChange && onChange();
    } catch (err) {
      alert(err.message);
    } finally {
      auto.disabled = false;
    }
  });
  const syncButton = h("button", { type: "button", id: "holiday-sync" }, t("hol.sync"));
  syncButton.addEventListener("click", async () => {
    syncButton.disabled = true;
    try {
      await post("/admin/calendar/sync", {});
    } catch (err) {
      alert(err.message);
    } finally {
      syncButton.disabled = false;
      onChange && onChange();
    }
  });
  const papers = (cal.papers || []).map((url) =>
    h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url));
  return h("div", { class: "card", id: "holiday-card" },
    h("h2", {}, t("hol.title")),
    dl([
      [t("hol.status"), h("span", { class: `cal-status cal-${status.replace(/\s+/g, "-")}` },
        t(`hol.st.${status}`))],
      [t("hol.year"), cal.year],
      ...counts,
      [t("hol.updated"), fmtZoned(cal.last_update || cal.last_sync)],
      [t("hol.source"), cal.source || "—"],
      [t("hol.notices"), papers.length ? h("span", { class: "papers" }, papers) : "—"],
    ]),
    cal.last_error ? h("p", { class: "warning" }, `${t("hol.error")}: ${cal.last_error.message}`) : null,
    h("div", { class: "actions" }, h("label", { class: "switch" }, auto, t("hol.auto")), syncButton),
  );
}

export function dl(rows) {
  return h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}
