// The dashboard's few lines of vanilla JS: charts, progress polling, form sections.
(function () {
  "use strict";

  // Charts: the server hands over Plotly figure dicts; we only draw them.
  var chartData = document.getElementById("charts-data");
  if (chartData && window.Plotly) {
    var figs = JSON.parse(chartData.textContent);
    Object.keys(figs).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) Plotly.newPlot(el, figs[id].data, figs[id].layout, {responsive: true, displaylogo: false});
    });
  }

  // Progress: poll the JSON endpoint while runs are active; reload once when all are done to show results.
  var table = document.getElementById("runs");
  function fmtEta(s) {
    if (s === null || s === undefined) return "";
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return (h ? h + "h " : "") + (h || m ? m + "m " : "") + sec + "s";
  }
  function poll() {
    fetch(table.dataset.progressUrl, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (p) {
        var active = false;
        p.runs.forEach(function (run) {
          var row = document.getElementById("run-" + run.id);
          if (!row) return;
          var st = row.querySelector(".run-status .status");
          st.textContent = run.status;
          st.className = "status " + run.status;
          row.querySelector("progress").value = run.fraction;
          row.querySelector(".pct").textContent = (100 * run.fraction).toFixed(1) + "%";
          row.querySelector(".jobs").textContent = run.jobs_done.toLocaleString() + " / " + run.jobs_total.toLocaleString();
          var isActive = run.status === "pending" || run.status === "running";
          row.querySelector(".eta").textContent = isActive && run.status === "running" ? fmtEta(run.eta_s) : "";
          var err = document.getElementById("run-" + run.id + "-error");
          if (run.error) { err.hidden = false; err.querySelector("td").textContent = run.error; }
          var tries = document.getElementById("run-" + run.id + "-attempts");
          if (tries && run.attempts_note) { tries.hidden = false; tries.querySelector("td").textContent = run.attempts_note; }
          if (isActive) active = true;
        });
        var es = document.getElementById("experiment-status");
        es.textContent = p.status;
        es.className = "status " + p.status;
        if (active) setTimeout(poll, 1000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  if (table && table.dataset.active === "1") setTimeout(poll, 500);

  // Trace imports (uploads page, trace page): poll each active import; reload once all have ended.
  var traces = document.getElementById("traces");
  function pollImports() {
    var rows = Array.prototype.filter.call(traces.querySelectorAll("tr[data-progress-url]"),
                                           function (r) { return r.dataset.active === "1"; });
    if (!rows.length) { window.location.reload(); return; }
    Promise.all(rows.map(function (row) {
      return fetch(row.dataset.progressUrl, {credentials: "same-origin"})
        .then(function (r) { return r.json(); })
        .then(function (p) {
          var st = row.querySelector(".import-status .status");
          st.textContent = p.status;
          st.className = "status " + p.status;
          var bar = row.querySelector("progress");
          if (bar) bar.value = p.fraction;
          var pct = row.querySelector(".pct");
          if (pct) pct.textContent = (100 * p.fraction).toFixed(1) + "%";
          var stage = row.querySelector(".stage");
          if (stage) stage.textContent = p.stage + ", " + p.rows_read.toLocaleString() + " rows";
          var err = document.getElementById("trace-" + p.id + "-error");
          if (err && p.error) { err.hidden = false; err.querySelector(".error").textContent = p.error; }
          row.dataset.active = (p.status === "pending" || p.status === "running") ? "1" : "0";
        });
    })).then(function () { setTimeout(pollImports, 1000); })
      .catch(function () { setTimeout(pollImports, 3000); });
  }
  if (traces && traces.dataset.active === "1") setTimeout(pollImports, 500);

  // Experiment form: show only the parameters of the chosen cluster, workload and schedulers.
  var form = document.getElementById("experiment-form") || document.getElementById("search-form");
  function sync() {
    var cluster = form.elements["cluster"].value, workload = form.elements["workload"].value;
    var chosen = {};
    form.querySelectorAll("input[name=schedulers]").forEach(function (c) { chosen[c.value] = c.checked; });
    form.querySelectorAll(".params").forEach(function (div) {
      var k = div.dataset.kind, n = div.dataset.name;
      div.hidden = !((k === "cluster" && n === cluster) || (k === "workload" && n === workload) ||
                     (k === "schedulers" && chosen[n]));
    });
  }
  if (form) { form.addEventListener("change", sync); sync(); }
})();
