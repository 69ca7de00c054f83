// One EventSource for the whole app (cookie auth works for EventSource). Keeping it open on every page
// matters beyond the Events page: a connected watcher is what lets the consent gate ask its question.

const TYPES = ["switch", "failure", "question", "question-closed", "pin", "served", "config", "rest"];
const listeners = new Set();
const stateListeners = new Set();
const history = [];
const HISTORY = 300;
let source = null;
let state = "connecting";

export function connect() {
  if (source) return;
  source = new EventSource("/admin/events?replay=100");
  const seen = new Set();
  const deliver = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    // A reconnect replays the ring buffer; ids keep each event shown once.
    if (event.id !== undefined) {
      if (seen.has(event.id)) return;
      seen.add(event.id);
    }
    history.push(event);
    if (history.length > HISTORY) history.shift();
    for (const fn of listeners) fn(event);
  };
  for (const type of TYPES) source.addEventListener(type, deliver);
  source.onmessage = deliver;
  source.onopen = () => setState("live");
  source.onerror = () => setState(source.readyState === EventSource.CLOSED ? "offline" : "connecting");
}

function setState(next) {
  state = next;
  for (const fn of stateListeners) fn(state);
}

export function onEvent(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function onState(fn) {
  stateListeners.add(fn);
  fn(state);
  return () => stateListeners.delete(fn);
}

export function recentEvents() {
  return history.slice();
}
