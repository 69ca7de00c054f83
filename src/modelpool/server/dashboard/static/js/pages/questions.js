// Questions: consent cards (SPEC §3.5). Switch or Keep; silence switches when the countdown ends.

import { get, post } from "../api.js";
import { h, replace } from "../dom.js";
import { t } from "../i18n.js";
import { onEvent } from "../live.js";

export function mount(root) {
  let alive = true;
  const cards = new Map(); // id → {el, deadline}
  const list = h("div", { class: "questions", id: "questions-list" });
  const empty = h("p", { class: "muted", id: "questions-none" }, t("qu.none"));
  replace(root, h("div", { class: "card" }, h("h2", {}, t("qu.title")), empty, list));

  const sync = (questions) => {
    const open = new Set(questions.map((q) => q.id));
    for (const [id, card] of cards) {
      if (!open.has(id) && !card.answered) {
        card.el.remove();
        cards.delete(id);
      }
    }
    for (const q of questions) if (!cards.has(q.id)) addCard(q);
    empty.hidden = cards.size > 0;
  };
  const addCard = (q) => {
    // The deadline is taken from `remaining` against this browser's clock, so a skewed clock between
    // browser and gateway cannot make the countdown lie.
    const card = { deadline: Date.now() + (q.remaining ?? 0) * 1000, answered: false };
    const countdown = h("span", { class: "countdown" });
    const outcome = h("span", { class: "outcome", role: "status" });
    const answer = async (text) => {
      for (const b of card.el.querySelectorAll("button")) b.disabled = true;
      try {
        const result = await post(`/admin/questions/${encodeURIComponent(q.id)}`, { answer: text });
        card.answered = true;
        card.el.dataset.outcome = result.outcome || "";
        outcome.textContent = t(`qu.outcome.${result.outcome}`);
      } catch (err) {
        outcome.textContent = `${t("error")}: ${err.message}`;
        for (const b of card.el.querySelectorAll("button")) b.disabled = false;
      }
    };
    card.countdown = countdown;
    card.el = h("div", { class: "question card", "data-qid": q.id },
      h("p", { class: "qmessage" }, q.message),
      h("p", { class: "qroute" }, h("code", {}, q.from), " → ", h("code", {}, q.to),
        ` · ${t("qu.kind")}: ${q.kind} · ${q.pool}`, q.session ? ` · ${q.session}` : ""),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "primary answer-switch", onclick: () => answer("switch") }, t("qu.switch")),
        h("button", { type: "button", class: "answer-keep", onclick: () => answer("keep") }, t("qu.keep")),
        countdown, outcome));
    cards.set(q.id, card);
    list.prepend(card.el);
    tick();
  };
  const tick = () => {
    for (const card of cards.values()) {
      if (card.answered) continue;
      const left = Math.max(0, Math.ceil((card.deadline - Date.now()) / 1000));
      card.countdown.textContent = t("qu.left", { s: left });
      card.countdown.dataset.left = String(left);
    }
  };
  const load = async () => {
    try {
      const data = await get("/admin/questions");
      if (alive) sync(data.questions);
    } catch (err) {
      if (alive) empty.textContent = `${t("error")}: ${err.message}`;
    }
  };
  load();
  const timer = setInterval(tick, 250);
  const poll = setInterval(load, 3000);
  const off = onEvent((e) => {
    // A new question is read back from the API rather than from the event: the event stream replays
    // history on connect, and only the API knows which questions are still open.
    if (e.type === "question") {
      load();
    } else if (e.type === "question-closed" && e.question) {
      const card = cards.get(e.question.id);
      if (card) {
        card.answered = true;
        card.el.dataset.outcome = e.question.outcome || "";
        card.el.classList.add("closed");
        card.countdown.textContent = "";
        const outcome = card.el.querySelector(".outcome");
        if (outcome) outcome.textContent = t(`qu.outcome.${e.question.outcome}`);
        for (const b of card.el.querySelectorAll("button")) b.disabled = true;
      }
    }
  });
  return () => {
    alive = false;
    clearInterval(timer);
    clearInterval(poll);
    off();
  };
}
