// The arrow-button editor for one provider ranking (pool seed "Setting the provider priority").
// Providers are listed by display name; nobody types an id. A provider that disappeared from the config
// stays in the list, flagged, until it is removed on purpose.

import { post } from "../api.js";
import { h, replace } from "../dom.js";
import { t } from "../i18n.js";

export function orderEditor(key, report, onSaved) {
  const entry = report.orders[key];
  const names = Object.fromEntries(report.providers.map((p) => [p.id, p]));
  const missing = new Set(entry.missing);
  let list = entry.display.slice();
  let dirty = false;
  const status = h("span", { class: "status", role: "status" });
  const listEl = h("ol", { class: "order", "data-key": key });
  const save = h("button", { type: "button", class: "primary save-order", "data-key": key, disabled: true }, t("se.save"));

  const move = (i, delta) => {
    const j = i + delta;
    if (j < 0 || j >= list.length) return;
    [list[i], list[j]] = [list[j], list[i]];
    dirty = true;
    draw();
  };
  const remove = (i) => {
    list.splice(i, 1);
    dirty = true;
    draw();
  };
  function draw() {
    save.disabled = !dirty;
    replace(listEl, list.map((pid, i) => {
      const p = names[pid];
      const gone = missing.has(pid) || !p;
      return h("li", { "data-provider": pid, class: gone ? "gone" : null },
        h("span", { class: "pos" }, `${i + 1}.`),
        h("span", { class: "name" }, p ? p.name : pid),
        p && p.name !== pid ? h("small", { class: "muted" }, ` ${pid}`) : null,
        p && p.twin ? h("span", { class: "tag" }, t("se.twin")) : null,
        p ? h("small", { class: "muted" }, ` · ${t(p.models === 1 ? "se.models1" : "se.models", { n: p.models })}`) : null,
        gone ? h("span", { class: "tag gone", title: t("se.goneHint") }, t("se.gone")) : null,
        h("span", { class: "arrows" },
          h("button", { type: "button", class: "up", "aria-label": `${t("se.up")}: ${pid}`, title: t("se.up"),
            disabled: i === 0, onclick: () => move(i, -1) }, "↑"),
          h("button", { type: "button", class: "down", "aria-label": `${t("se.down")}: ${pid}`, title: t("se.down"),
            disabled: i === list.length - 1, onclick: () => move(i, 1) }, "↓"),
          gone ? h("button", { type: "button", class: "remove", onclick: () => remove(i) }, t("se.remove")) : null));
    }));
  }
  async function send(order) {
    save.disabled = true;
    status.textContent = "…";
    try {
      const next = await post("/admin/providers/order", { key, order });
      status.textContent = t("saved");
      onSaved(next);
    } catch (err) {
      status.textContent = `${t("error")}: ${err.message}`;
      save.disabled = !dirty;
    }
  }
  save.addEventListener("click", () => send(list));
  draw();
  const reset = entry.layer === "dashboard"
    ? h("button", { type: "button", class: "reset-order", title: t("se.resetHint"), onclick: () => send(null) }, t("se.reset"))
    : null;
  return h("div", { class: "order-editor", "data-key": key },
    h("div", { class: "order-meta" },
      h("code", {}, key), " ", h("span", { class: "layer", "data-layer": entry.layer }, t(`layer.${entry.layer}`)),
      entry.inherits ? h("span", { class: "tag" }, t("se.inherits")) : null),
    listEl,
    h("div", { class: "actions" }, save, reset, status));
}
