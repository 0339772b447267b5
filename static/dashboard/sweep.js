// A sweep's charts and table: drawn from the server's figure dicts, refreshed while cells finish.
(function () {
  "use strict";
  var section = document.getElementById("sweep");
  var data = document.getElementById("sweep-data");
  if (!section || !data || !window.simcoreWithPlotly) return;

  function draw(figs) {
    window.simcoreWithPlotly(function () {  // app.js fetches Plotly's script the first time
      Object.keys(figs).forEach(function (id) {
        var el = document.getElementById(id);
        if (el) Plotly.react(el, figs[id].data, figs[id].layout, {responsive: true, displaylogo: false});
      });
    });
  }

  function num(x) {
    if (x === null || x === undefined) return "-";
    return Number.isInteger(x) ? x.toLocaleString() : Number(x.toPrecision(4)).toString();
  }

  function progressText(p) {
    var parts = [p.finished + " of " + p.cells + " cells finished"];
    ["running", "pending", "failed", "cancelled"].forEach(function (k) { if (p[k]) parts.push(p[k] + " " + k); });
    var text = parts.join(", ") + "; " + p.cached + " from the result cache";
    if (p.eta_s) text += "; ETA " + Math.round(p.eta_s) + " s";
    return text;
  }

  function renderTable(body) {
    var tbody = document.querySelector("#sweep-table tbody");
    if (!tbody) return;
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    body.rows.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.className = "sweep-row";
      var cells = body.axes.map(function (a) { return String(r.point[a.name]); });
      cells.push(r.scheduler, String(r.runs), num(r.mean),
                 r.ci95_low === null ? "-"
                   : "[" + (r.ci95_clipped ? "0*" : num(r.ci95_low)) + ", " + num(r.ci95_high) + "]",
                 num(r.min), num(r.max), String(r.unstable));
      cells.forEach(function (c, i) {
        var td = document.createElement("td");
        td.textContent = c;
        if (i === cells.length - 1 && r.unstable) td.className = "bad";
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  function render(body) {
    document.getElementById("sweep-progress-text").textContent = progressText(body.progress);
    document.getElementById("sweep-bar").value = body.progress.fraction;
    renderTable(body);
    draw(body.figures);
  }

  function poll() {
    fetch(section.dataset.liveUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (body) {
        render(body);
        if (body.status === "pending" || body.status === "running") setTimeout(poll, 1500);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }

  draw(JSON.parse(data.textContent));
  if (section.dataset.active === "1") setTimeout(poll, 1000);
})();
