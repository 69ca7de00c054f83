// Settings: the behaviour knobs (each saves on change into the dashboard layer and shows the layer its
// value comes from), the provider-priority and peak/idle ranking editors, merged groups, holidays.

import { get, patch } from "../api.js";
import { fmtZoned, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { dl, holidayCard } from "./cards.js";
import { groupsCard } from "./groups_editor.js";
import { orderEditor } from "./order_editor.js";

const STRATEGIES = ["priority", "round-robin", "weighted-random", "least-used", "fastest", "cheapest", "throughput", "score"];
const BEHAVIOUR = [
  ["pool.strategy", "select", STRATEGIES],
  ["pool.sticky", "bool"],
  ["pool.fallback", "bool"],
  ["pool.model_fallback", "select", ["off", "same-family", "any"]],
  ["pool.max_attempts", "int", { min: 1, max: 8 }],
  ["pool.retries_per_route", "int", { min: 0, max: 5 }],
  ["pool.retry_backoff", "seconds"],
  ["pool.cooldown", "seconds"],
  ["pool.max_cooldown", "seconds"],
  ["pool.quota_cooldown", "seconds"],
  ["pool.quota_reset_hour", "int", { min: 0, max: 23 }],
  ["pool.prefer_same_model", "bool"],
  ["pool.confirm_switch", "select", ["off", "ask"]],
  ["pool.confirm_timeout", "seconds"],
  ["pool.notice", "select", ["header", "inline"]],
  ["gateway_ranking.enabled", "bool"],
  ["gateway_ranking.min_uptime", "number", { min: 0, max: 100 }],
  ["gateway_ranking.stats_ttl", "seconds"],
];
const PEAK = [
  ["peak.enabled", "bool"],
  ["peak.time_zone", "text"],
  ["peak.windows", "list"],
  ["peak.weekdays", "weekdays"],
];
const WEEKDAYS = { en: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], zh: ["一", "二", "三", "四", "五", "六", "日"] };

export function mount(root) {
  let alive = true;
  const state = { settings: {}, providers: null, calendar: null };
  const behaviour = h("div", { class: "card", id: "behaviour-card" }, h("h2", {}, t("se.behaviour")));
  const priority = h("div", { class: "card", id: "priority-card" }, h("h2", {}, t("se.priority")));
  const peak = h("div", { class: "card", id: "peak-card" }, h("h2", {}, t("se.peakCard")));
  const holidays = h("div", { id: "holiday-slot" });

  const loadSettings = async () => {
    const data = await get("/admin/settings");
    state.settings = Object.fromEntries(data.settings.map((s) => [s.key, s]));
  };
  const loadProviders = async () => {
    state.providers = await get("/admin/providers");
  };
  const loadCalendar = async () => {
    state.calendar = await get("/admin/calendar");
  };
  const draw = () => {
    if (!alive) return;
    replace(behaviour, h("h2", {}, t("se.behaviour")), h("div", { class: "knobs" }, BEHAVIOUR.map((k) => knob(k, state, afterSave))));
    if (state.providers) {
      replace(priority, h("h2", {}, t("se.priority")), h("p", { class: "muted" }, t("se.priorityHint")),
        orderEditor("pool.provider_order", state.providers, onOrders));
      const period = state.providers.period;
      replace(peak, h("h2", {}, t("se.peakCard")),
        dl([[t("period.now"), h("span", { class: `period ${period.peak ? "peak" : "idle"}` }, t(period.peak ? "period.peak" : "period.idle"))],
          [t("period.next"), period.next_flip ? `${fmtZoned(period.next_flip)} → ${t(`period.${period.next_period}`)}` : "—"], [t("period.why"), period.why || "—"]]),
        h("div", { class: "knobs" }, PEAK.map((k) => knob(k, state, afterSave))),
        h("div", { class: "two" },
          h("div", {}, h("h3", {}, t("se.peakList"), period.peak ? inForce() : null),
            orderEditor("peak.peak_provider_order", state.providers, onOrders)),
          h("div", {}, h("h3", {}, t("se.offPeakList"), period.peak ? null : inForce()),
            orderEditor("peak.off_peak_provider_order", state.providers, onOrders))));
    }
    if (state.calendar) replace(holidays, holidayCard(state.calendar, () => loadCalendar().then(draw)));
  };
  const onOrders = (report) => {
    state.providers = report;
    loadSettings().then(draw);
  };
  async function afterSave() {
    await Promise.all([loadSettings(), loadProviders(), loadCalendar()]);
    draw();
  }

  replace(root, behaviour, priority, peak, groupsCard(), holidays);
  afterSave().catch((err) => replace(behaviour, h("p", { class: "error" }, `${t("error")}: ${err.message}`)));
  return () => {
    alive = false;
  };
}

function inForce() {
  return h("span", { class: "tag in-force" }, t("se.inForce"));
}

function knob([key, type, options], state, afterSave) {
  const setting = state.settings[key] || { value: null, layer: "default" };
  const id = `knob-${key.replace(/\./g, "-")}`;
  const msg = h("span", { class: "msg", role: "status" });
  const save = async (value) => {
    msg.textContent = "…";
    try {
      await patch("/admin/settings", { [key]: value });
      await afterSave();
    } catch (err) {
      msg.textContent = err.message;
      msg.classList.add("error");
    }
  };
  const input = control(type, options, setting.value, id, save);
  return h("div", { class: "knob", "data-key": key, "data-layer": setting.layer },
    h("label", { for: id }, t(`k.${key}`), h("small", { class: "muted key" }, key)),
    input,
    h("span", { class: "layer", "data-layer": setting.layer, title: t("se.layer") }, t(`layer.${setting.layer}`)),
    setting.layer === "dashboard"
      ? h("button", { type: "button", class: "reset", title: t("se.resetHint"), onclick: () => save(null) }, t("se.reset"))
      : h("span"), // keeps the grid columns aligned
    msg);
}

function control(type, options, value, id, save) {
  if (type === "bool") {
    const box = h("input", { type: "checkbox", id, checked: value });
    box.addEventListener("change", () => save(box.checked));
    return box;
  }
  if (type === "select") {
    const select = h("select", { id }, options.map((o) => h("option", { value: o }, o)));
    select.value = value;
    select.addEventListener("change", () => save(select.value));
    return select;
  }
  if (type === "weekdays") {
    const lang = document.documentElement.lang.startsWith("zh") ? "zh" : "en";
    const chosen = new Set(value || []);
    const inputs = WEEKDAYS[lang].map((_, i) => h("input", { type: "checkbox", value: String(i + 1), checked: chosen.has(i + 1) }));
    const changed = () => save(inputs.filter((b) => b.checked).map((b) => Number(b.value)));
    for (const box of inputs) box.addEventListener("change", changed);
    return h("span", { id, class: "weekdays" },
      inputs.map((box, i) => h("label", { class: "day", "data-day": String(i + 1) }, box, WEEKDAYS[lang][i])));
  }
  const numeric = type === "int" || type === "number" || type === "seconds";
  const shown = type === "list" ? (value || []).join(", ") : value ?? "";
  const input = h("input", {
    id, type: numeric ? "number" : "text", value: shown,
    step: type === "int" ? "1" : "any", min: options && options.min, max: options && options.max,
    placeholder: type === "list" ? t("se.windowsHint") : null,
  });
  input.addEventListener("change", () => {
    const raw = input.value.trim();
    if (type === "list") save(raw ? raw.split(",").map((s) => s.trim()).filter(Boolean) : []);
    else if (numeric) save(raw === "" ? null : Number(raw));
    else save(raw);
  });
  return input;
}
