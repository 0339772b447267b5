// The search page: poll its progress while it runs; redraw the charts as generations finish; reload when it ends.
(function () {
  "use strict";
  var box = document.getElementById("search-progress");
  if (!box || box.dataset.active !== "1") return;
  var done = parseInt(box.dataset.done, 10);
  function redraw() {
    fetch(box.dataset.chartsUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (figs) {
        Object.keys(figs).forEach(function (id) {
          var el = document.getElementById(id);
          // drawn already (app.js draws each chart as it nears the viewport): swap in the new figure
          if (el && el.data && window.Plotly) Plotly.react(el, figs[id].data, figs[id].layout, {responsive: true, displaylogo: false});
        });
      });
  }
  function poll() {
    fetch(box.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (p) {
        var st = document.getElementById("search-status");
        st.textContent = p.status;
        st.className = "status " + p.status;
        box.querySelector("progress").value = p.generations_done;
        document.getElementById("search-generations").textContent = p.generations_done;
        document.getElementById("search-step").textContent = "Generation " + p.generation + ": " + p.phase + " " +
          p.evaluations_done + " / " + p.evaluations_total + " simulations." + (p.waiting ? " " + p.waiting + "." : "");
        if (p.error) {
          var err = document.getElementById("search-error");
          err.hidden = false;
          err.textContent = p.error;
        }
        var active = p.status === "pending" || p.status === "running";
        if (!active || (done === 0 && p.generations_done > 0)) { window.location.reload(); return; }
        if (p.generations_done !== done) { done = p.generations_done; redraw(); }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
})();
