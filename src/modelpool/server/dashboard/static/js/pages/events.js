// Events: the live switch/failure log, straight from the app's EventSource on /admin/events.

import { fmtTime, h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent, recentEvents } from "../live.js";

const SHOWN = 200;

export function mount(root) {
  const list = h("ol", { class: "events", id: "events-list", reversed: true });
  const empty = h("p", { class: "muted", id: "events-none" }, t("ev.none"));
  replace(root, h("div", { class: "card" }, h("h2", {}, t("ev.title")), empty, list));
  const add = (event) => {
    empty.hidden = true;
    list.prepend(item(event));
    while (list.children.length > SHOWN) list.lastChild.remove();
  };
  for (const event of recentEvents()) add(event);
  return onEvent(add);
}

function item(e) {
  return h("li", { class: "event", "data-type": e.type, "data-id": e.id },
    h("time", {}, fmtTime(e.at)),
    h("span", { class: "etype", "data-type": e.type }, label(e.type)),
    h("span", { class: "etext" }, describe(e)));
}

function label(type) {
  const text = t(`ev.${type}`);
  return text === `ev.${type}` ? type : text; // a type this page does not know yet shows as it is
}

function describe(e) {
  switch (e.type) {
    case "switch": return `${e.from} → ${e.to} (${e.kind})${e.pool ? ` · ${e.pool}` : ""}${e.session ? ` · ${e.session}` : ""}`;
    case "failure": return `${e.route} · ${e.kind}${e.status ? ` ${e.status}` : ""}${e.rest ? ` · ${t("ev.rest", { rest: `${e.rest}s` })}` : ""}`;
    case "question":
    case "question-closed": {
      const q = e.question || {};
      return `${q.from} → ${q.to} (${q.kind})${q.outcome ? ` · ${q.outcome}` : ""}`;
    }
    case "hedge": return e.winner
      ? `${e.loser} → ${e.winner} (${e.outcome})${e.pool ? ` · ${e.pool}` : ""}${e.session ? ` · ${e.session}` : ""}`
      : `${e.loser} (${e.outcome})${e.pool ? ` · ${e.pool}` : ""}`;
    case "pin": return `${e.pool} → ${e.route}`;
    case "served": return `${e.route || ""}${e.session ? ` · ${e.session}` : ""}`;
    default: {
      const { id, type, at, ...rest } = e;
      return JSON.stringify(rest);
    }
  }
}
