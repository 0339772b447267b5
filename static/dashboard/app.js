// The dashboard's few lines of vanilla JS: charts, progress polling, form sections.
(function () {
  "use strict";

  // Charts: the server hands over Plotly figure dicts (dashboard/charts.py); we draw them and apply the
  // choices above each chart (layout.meta.controls): an option's `update` goes to Plotly.update as it is,
  // its `smooth_h` is a moving-average window (hours) over every trace marked meta.smooth.
  var chartData = document.getElementById("charts-data");
  var raw = {};  // chart id -> the traces' unsmoothed y arrays

  function movingAverage(y, half) {
    var n = y.length, s = new Float64Array(n + 1), c = new Float64Array(n + 1), i;
    for (i = 0; i < n; i++) {
      var ok = y[i] !== null && y[i] !== undefined && isFinite(y[i]);
      s[i + 1] = s[i] + (ok ? y[i] : 0);
      c[i + 1] = c[i] + (ok ? 1 : 0);
    }
    var out = new Array(n);
    for (i = 0; i < n; i++) {
      var a = Math.max(0, i - half), b = Math.min(n, i + half + 1), k = c[b] - c[a];
      out[i] = (y[i] === null || y[i] === undefined || k === 0) ? null : +((s[b] - s[a]) / k).toPrecision(4);
    }
    return out;
  }

  function smooth(el, hours) {
    if (!raw[el.id]) raw[el.id] = el.data.map(function (t) { return t.y ? t.y.slice() : null; });
    var ys = [], idx = [];
    el.data.forEach(function (t, i) {
      if (!t.meta || !t.meta.smooth || !raw[el.id][i] || !t.dx) return;
      var half = Math.round(hours / t.dx / 2);
      ys.push(hours > 0 && half >= 1 ? movingAverage(raw[el.id][i], half) : raw[el.id][i].slice());
      idx.push(i);
    });
    if (idx.length) Plotly.restyle(el, {y: ys}, idx);
  }

  // Plotly's script (<body data-plotly>, the basic bundle: every chart here is scatter or bar) is fetched
  // when the first chart is drawn, never as a blocking script in <head>: the full bundle there held
  // sweep, search and packing pages blank for 6-19 s under load (issue 28). sweep.js (deferred, so it
  // runs after this file) draws through window.simcoreWithPlotly too.
  var plotlyWaiting = [];
  function withPlotly(cb) {
    if (window.Plotly) { cb(); return; }
    plotlyWaiting.push(cb);
    if (plotlyWaiting.length > 1) return;
    var s = document.createElement("script");
    s.src = document.body.dataset.plotly;
    s.onload = function () {
      var todo = plotlyWaiting;
      plotlyWaiting = [];
      todo.forEach(function (f) { f(); });
    };
    document.head.appendChild(s);
  }
  window.simcoreWithPlotly = withPlotly;

  // Each chart is drawn when it comes near the viewport: a page opens with its tables at once, and
  // charts never scrolled to cost nothing.
  if (chartData) {
    var figs = JSON.parse(chartData.textContent), drawn = {};
    var apply = function (sel) {
      var el = document.getElementById(sel.dataset.chart);
      var opt = figs[sel.dataset.chart].layout.meta.controls[+sel.dataset.control].options[+sel.value];
      if (opt.update) Plotly.update(el, opt.update.data || {}, opt.update.layout || {});
      if (opt.smooth_h !== undefined) smooth(el, opt.smooth_h);
    };
    var draw = function (id, then) {
      withPlotly(function () {
        if (!drawn[id]) {
          drawn[id] = true;
          var el = document.getElementById(id);
          Plotly.newPlot(el, figs[id].data, figs[id].layout, {responsive: true, displaylogo: false});
          // a choice preselected by the server (a smoothing window), or kept by the browser on reload
          document.querySelectorAll('select[data-chart="' + id + '"]').forEach(function (sel) {
            if (sel.selectedIndex > 0) apply(sel);
          });
        }
        if (then) then();
      });
    };
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target.id); }
      });
    }, {rootMargin: "300px 0px"});
    Object.keys(figs).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) seen.observe(el);
    });
    document.querySelectorAll("select[data-chart]").forEach(function (sel) {
      sel.addEventListener("change", function () { draw(sel.dataset.chart, function () { apply(sel); }); });
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
        var active = false, versions = {};
        p.runs.forEach(function (run) {
          if (run.code_version) versions[run.code_version] = true;
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
          var cancel = row.querySelector(".run-cancel");
          if (cancel && !isActive) cancel.remove();  // a finished run has nothing to cancel
          var err = document.getElementById("run-" + run.id + "-error");
          if (run.error) { err.hidden = false; err.querySelector("td").textContent = run.error; }
          var wait = document.getElementById("run-" + run.id + "-waiting");
          if (wait) { wait.hidden = !run.waiting; wait.querySelector("td").textContent = run.waiting || ""; }
          var tries = document.getElementById("run-" + run.id + "-attempts");
          if (tries && run.attempts_note) { tries.hidden = false; tries.querySelector("td").textContent = run.attempts_note; }
          if (isActive) active = true;
        });
        var vs = Object.keys(versions).sort(), out = document.getElementById("code-versions");
        if (out && vs.length) {
          out.textContent = "";
          vs.forEach(function (v, i) {
            if (i) out.appendChild(document.createTextNode(", "));
            var code = document.createElement("code");
            code.textContent = v;
            out.appendChild(code);
          });
          document.getElementById("code-versions-s").textContent = vs.length > 1 ? "s" : "";
        }
        var es = document.getElementById("experiment-status");
        es.textContent = p.status_text || p.status;
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
          if (stage) stage.textContent = p.waiting || p.stage + ", " + p.rows_read.toLocaleString() + " rows";
          var err = document.getElementById("trace-" + p.id + "-error");
          if (err && p.error) { err.hidden = false; err.querySelector(".error").textContent = p.error; }
          row.dataset.active = (p.status === "pending" || p.status === "running") ? "1" : "0";
        });
    })).then(function () { setTimeout(pollImports, 1000); })
      .catch(function () { setTimeout(pollImports, 3000); });
  }
  if (traces && traces.dataset.active === "1") setTimeout(pollImports, 500);

  // Experiment form (and the search and capacity-plan forms, which extend it): show only the parameters of the chosen cluster, workload and schedulers; disable the
  // schedulers the workload cannot serve and the load where it does not apply, saying why (the server
  // refuses them with the same reasons when this script does not run).
  var form = document.getElementById("experiment-form") || document.getElementById("search-form") ||
    document.getElementById("capacity-form");
  var capsEl = document.getElementById("form-capabilities");
  var caps = capsEl ? JSON.parse(capsEl.textContent) : {workloads: {}, schedulers: {}};
  function reason(host, text) {
    var r = host.querySelector(".reason");
    if (!r && text) { r = document.createElement("small"); r.className = "reason"; host.appendChild(r); }
    if (r) { r.textContent = text; r.hidden = !text; }
  }
  function sync(e) {
    var cluster = form.elements["cluster"].value, workload = form.elements["workload"].value;
    var wl = caps.workloads[workload] || {provides: [], uses_load: true, load_note: ""};
    form.querySelectorAll("input[name=schedulers]").forEach(function (c) {
      var needs = (caps.schedulers[c.value] || {}).requires || [];
      var missing = needs.filter(function (n) { return wl.provides.indexOf(n) < 0; });
      c.disabled = missing.length > 0;
      if (c.disabled) c.checked = false;
      reason(c.parentNode, missing.length ? "not with this workload: " + caps.schedulers[c.value].why : "");
    });
    var load = form.elements["load"];
    if (load) {
      load.disabled = !wl.uses_load;
      // When another workload is picked and the reader has not typed a load, the load follows the workload's
      // default (a trace replays as recorded, 1); the value a page opens with (a fork's) is kept.
      if (e && e.target === form.elements["workload"] && !load.dataset.typed && wl.default_load !== undefined) {
        load.value = wl.default_load;
      }
      // The hours follow too (the quick start's 25 h suit its workload, not another's: blank is the preset's).
      var hours = form.elements["hours"];
      if (e && e.target === form.elements["workload"] && hours && !hours.dataset.typed && wl.default_hours !== undefined) {
        hours.value = wl.default_hours;
      }
      var field = document.getElementById("field-load");
      field.classList.toggle("not-applicable", !wl.uses_load);
      reason(field, wl.uses_load ? "" : wl.load_note);
    }
    var chosen = {};
    form.querySelectorAll("input[name=schedulers]").forEach(function (c) { chosen[c.value] = c.checked; });
    form.querySelectorAll(".params").forEach(function (div) {
      var k = div.dataset.kind, n = div.dataset.name;
      div.hidden = !((k === "cluster" && n === cluster) || (k === "workload" && n === workload) ||
                     (k === "schedulers" && chosen[n]));
    });
  }
  // The menu: on a narrow screen it folds behind its button (style.css); without this script it wraps instead.
  var nav = document.getElementById("nav"), toggle = document.getElementById("menu-toggle");
  if (nav && toggle) {
    nav.classList.add("collapsible");
    toggle.addEventListener("click", function () {
      var open = nav.classList.toggle("open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  if (form) {
    if (form.elements["load"]) form.elements["load"].addEventListener("input", function (e) { e.target.dataset.typed = "1"; });
    if (form.elements["hours"]) form.elements["hours"].addEventListener("input", function (e) { e.target.dataset.typed = "1"; });
    form.addEventListener("change", sync);
    sync(null);
  }
})();
