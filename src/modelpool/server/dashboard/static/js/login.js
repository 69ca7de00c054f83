import { applyStatic, bindSwitcher } from "./i18n.js";

applyStatic();
bindSwitcher(document.getElementById("lang"));
if (new URLSearchParams(window.location.search).get("login") === "failed") {
  document.getElementById("login-error").hidden = false;
}
