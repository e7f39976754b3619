// Case filter and expand/collapse for the levelfield report; works on the static markup only.
(function () {
  "use strict";
  var search = document.getElementById("case-search");
  var differ = document.getElementById("case-differ");
  var failed = document.getElementById("case-failed");
  var count = document.getElementById("case-count");
  var cases = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  function apply() {
    var q = (search && search.value || "").toLowerCase();
    var shown = 0;
    cases.forEach(function (el) {
      var ok = (!q || (el.getAttribute("data-search") || "").indexOf(q) !== -1) &&
        (!differ || !differ.checked || el.getAttribute("data-differs") === "1") &&
        (!failed || !failed.checked || el.getAttribute("data-failed") === "1");
      el.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = shown + " of " + cases.length + " cases"; }
  }
  [search, differ, failed].forEach(function (el) { if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); } });
  function setAll(open) { cases.forEach(function (el) { if (!el.hidden) { el.open = open; } }); }
  var expand = document.getElementById("expand-all");
  var collapse = document.getElementById("collapse-all");
  if (expand) { expand.addEventListener("click", function () { setAll(true); }); }
  if (collapse) { collapse.addEventListener("click", function () { setAll(false); }); }
  apply();
  document.documentElement.setAttribute("data-report-ready", "1");
})();
