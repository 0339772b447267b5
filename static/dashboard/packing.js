// Packing analysis pages: the new-analysis form shows the chosen source's fields; the page polls progress.
(function () {
  "use strict";

  var form = document.getElementById("packing-form");
  function syncSource() {
    var checked = form.querySelector("input[name=source]:checked");
    var chosen = checked ? checked.value : "";
    form.querySelectorAll(".source").forEach(function (div) { div.hidden = div.dataset.source !== chosen; });
  }
  if (form) { form.addEventListener("change", syncSource); syncSource(); }

  var box = document.getElementById("packing-progress");
  function poll() {
    fetch(box.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (p) {
        var st = document.getElementById("packing-status");
        st.textContent = p.status;
        st.className = "status " + p.status;
        var bar = box.querySelector("progress");
        if (bar) bar.value = p.fraction;
        var pct = box.querySelector(".pct");
        if (pct) pct.textContent = (100 * p.fraction).toFixed(1) + "%";
        var stage = box.querySelector(".stage");
        if (stage) stage.textContent = p.waiting || p.stage;
        var size = document.getElementById("snapshot-size");
        if (size) size.textContent = p.size ? "(" + p.size + ")" : "";
        var eta = document.getElementById("packing-eta");
        if (eta) eta.textContent = p.eta || "";
        var err = document.getElementById("packing-error");
        if (p.error) { err.hidden = false; err.textContent = p.error; }
        if (p.status === "pending" || p.status === "running") setTimeout(poll, 1000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  if (box && box.dataset.active === "1") setTimeout(poll, 500);
})();
