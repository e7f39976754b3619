// levelfield view: notice new results. Polls the server (same origin only) and reloads a page that
// asks for it (the runs list, a run still running) unless the reader has started using its forms;
// otherwise it shows a "new results" note with a reload link.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-poll");
  var known = body.getAttribute("data-version");
  var touched = false;
  document.addEventListener("input", function () { touched = true; });
  document.addEventListener("change", function () { touched = true; });
  function check() {
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data || !data.version || data.version === known) { return; }
        if (body.getAttribute("data-autoreload") === "1" && !touched) {
          window.location.reload();
          return;
        }
        known = data.version;
        var note = document.getElementById("updated");
        if (note) { note.hidden = false; }
      })
      .catch(function () { /* the server stopped: keep the page as it is */ });
  }
  // Filters left empty stay out of the address, so a shared link says only what was chosen.
  document.addEventListener("submit", function (event) {
    Array.prototype.forEach.call(event.target.elements, function (el) {
      if (el.name && el.value === "" && el.type !== "submit") { el.disabled = true; }
    });
  });
  if (url) { window.setInterval(check, 2000); }
  document.documentElement.setAttribute("data-view-ready", "1");
})();
