// The app shell: hash router, language switcher, live-connection badge and the pending-questions count.
// Each page module exports mount(root) → cleanup; a language switch re-mounts the current page.

import { get } from "./api.js";
import { h, replace } from "./dom.js";
import { applyStatic, bindSwitcher, onLang, t } from "./i18n.js";
import { connect, onEvent, onState } from "./live.js";

const PAGES = ["overview", "models", "ranking", "settings", "sessions", "events", "questions", "usage"];
const main = document.getElementById("main");
let cleanup = null;
let current = null;
let generation = 0;

function pageFromHash() {
  const name = (window.location.hash || "").replace(/^#\/?/, "").split("?")[0];
  return PAGES.includes(name) ? name : "overview";
}

async function show(name) {
  const mine = ++generation;
  if (cleanup) {
    try {
      cleanup();
    } catch (err) {
      console.error(err);
    }
    cleanup = null;
  }
  current = name;
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.page === name);
    if (link.dataset.page === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  replace(main, h("p", { class: "muted" }, t("loading")));
  const module = await import(`./pages/${name}.js`);
  if (mine !== generation) return; // the user moved on while the module loaded
  const root = h("section", { class: "page", id: `page-${name}`, "data-page": name });
  replace(main, root);
  cleanup = module.mount(root) || null;
}

async function refreshQuestionCount() {
  try {
    const data = await get("/admin/questions");
    const n = data.questions.length;
    const badge = document.getElementById("question-count");
    badge.textContent = String(n);
    badge.hidden = n === 0;
    const notice = document.getElementById("notice");
    if (n > 0 && current !== "questions") {
      replace(notice, t("qu.banner"), " ", h("a", { href: "#/questions" }, t("qu.open")));
      notice.hidden = false;
    } else {
      notice.hidden = true;
    }
  } catch (err) {
    console.warn("questions", err);
  }
}

function start() {
  applyStatic();
  bindSwitcher(document.getElementById("lang"));
  onLang(() => show(current || pageFromHash()));
  const live = document.getElementById("live");
  onState((state) => {
    live.dataset.state = state;
    live.textContent = t(`live.${state}`);
  });
  onLang(() => {
    live.textContent = t(`live.${live.dataset.state}`);
  });
  connect();
  onEvent((event) => {
    if (event.type === "question" || event.type === "question-closed") refreshQuestionCount();
  });
  window.addEventListener("hashchange", () => {
    show(pageFromHash());
    refreshQuestionCount();
  });
  show(pageFromHash());
  refreshQuestionCount();
}

start();
