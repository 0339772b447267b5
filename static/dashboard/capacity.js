// The capacity plan page: poll its progress while it runs (probes, round, bounds); reload when it ends.
(function () {
  "use strict";
  var box = document.getElementById("capacity-progress");
  if (!box || box.dataset.active !== "1") return;
  function text(id, value) {
    var el = document.getElementById(id);
    if (el) el.textContent = value;
  }
  function poll() {
    fetch(box.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (p) {
        var st = document.getElementById("capacity-status");
        st.textContent = p.status;
        st.className = "status " + p.status;
        text("capacity-probes", p.probes_done);
        text("capacity-round-done", p.round_done);
        text("capacity-round-total", p.round_total);
        text("capacity-phase", p.phase === "bounds" ? "computing the bounds (compaction of a snapshot, lambda*)" :
          p.phase === "curve" ? "the curve's extra sizes: " + p.wanted : "round " + p.round + ": " + p.wanted);
        if (p.bounds) {
          text("capacity-bounds", "Bounds: compaction " + (p.bounds.compaction || "none") + " machines, lambda* " +
            (p.bounds.lambda_star || "none") + " machines; the search probes " + p.bounds.floor + " to " +
            p.bounds.ceiling + " machines (given: " + p.bounds.given + ").");
        }
        if (p.error) {
          var err = document.getElementById("capacity-error");
          err.hidden = false;
          err.textContent = p.error;
        }
        if (p.status !== "pending" && p.status !== "running") { window.location.reload(); return; }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
})();
