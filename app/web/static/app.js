// Progressive enhancement only: every page works without this file.
// On the home page, say whether the box will be matched or searched, with the same rule
// the server applies (app.search.query.looks_like_paste).
(function () {
  "use strict";
  var box = document.getElementById("text");
  var hint = document.getElementById("mode-hint");
  if (!box || !hint) { return; }
  var errorLine = /^\s{0,40}(?:[A-Za-z_]\w{0,127}\.){0,16}[A-Za-z_]\w{0,127}(?:Error|Exception|Warning|Exit|Interrupt)(?::|\s*$)/;
  function looksLikePaste(text) {
    var stripped = text.trim();
    return stripped.indexOf("\n") >= 0 ||
      stripped.indexOf("Traceback (most recent call last)") >= 0 ||
      errorLine.test(stripped.slice(0, 300));
  }
  function update() {
    var mode = document.querySelector('input[name="mode"]:checked');
    if (!box.value.trim() || (mode && mode.value !== "auto")) { hint.hidden = true; return; }
    hint.hidden = false;
    hint.textContent = looksLikePaste(box.value)
      ? "This looks like a traceback or log: it will be matched."
      : "This looks like a query: it will be searched.";
  }
  box.addEventListener("input", update);
  document.querySelectorAll('input[name="mode"]').forEach(function (radio) {
    radio.addEventListener("change", update);
  });
  // Ctrl/Cmd+Enter submits the box, as in most paste boxes.
  box.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { box.form.requestSubmit(); }
  });
  update();
})();
