// The report page's own script: it draws the run's data, embedded as JSON
// in #report-data, with uPlot. Text goes in through textContent only.
(function () {
  "use strict";
  const t0 = performance.now();
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const tParsed = performance.now();
  const PAGE_ROWS = 50;
  const { el, num, tick, ys, elapsed, collapsed, paged, ELAPSED_STEPS } = primePage;
  const xs = primePage.decodeXs(data.xs);

  // ---- metric curves ----
  const drawn = [];
  // The lines of one chart (the System section's GPUs, processes and
  // percentiles), told apart by colour; the first is a lone curve's.
  const PALETTE = primePage.PALETTE;
  // The time of day beside it, short: the header gives the run's dates.
  const clock = uPlot.fmtDate("{HH}:{mm}:{ss}");
  const systemPanels = (data.system || []).flatMap((f) => f.panels.concat(f.totals || []));

  // The System section's time is counted from the run's first row, not
  // shown as time of day: a page opened in another time zone than the
  // run's would show another clock, and "how long into the run" is what
  // a system curve is read against. Its charts share one x range, so that
  // a moment is at one place in every chart.
  let sysStart = data.start || Infinity, sysEnd = -Infinity;
  for (const p of systemPanels) {
    if (p.axis !== "time") continue;
    for (const i of p.charts) {
      const [lo, hi] = extent(data.charts[i]);
      sysStart = Math.min(sysStart, lo);
      sysEnd = Math.max(sysEnd, hi);
    }
  }

  // extent is the least and greatest x of a curve, its not-finite marks
  // included.
  function extent(c) {
    const x = xs[c.xi], d = c.dropped || [];
    let lo = Infinity, hi = -Infinity;
    if (x.length) {
      lo = x[0];
      hi = x[x.length - 1];
    }
    if (d.length) {
      lo = Math.min(lo, d[0]);
      hi = Math.max(hi, d[d.length - 1]);
    }
    return [lo, hi];
  }

  function markDropped(u, dropped) {
    if (!dropped.length) return;
    const ctx = u.ctx, y = u.bbox.top + u.bbox.height, s = 5 * devicePixelRatio;
    ctx.save();
    ctx.fillStyle = "#dc2626";
    for (const x of dropped) {
      const px = u.valToPos(x, "x", true);
      if (px < u.bbox.left - 1 || px > u.bbox.left + u.bbox.width + 1) continue;
      ctx.beginPath();
      ctx.moveTo(px, y - 2 * s);
      ctx.lineTo(px - s, y);
      ctx.lineTo(px + s, y);
      ctx.closePath();
      ctx.fill();
    }
    ctx.restore();
  }

  // draw draws a card's chart: spec.series are its lines ({c, label}), and
  // spec.rel says its time is counted from the run's first row.
  function draw(card, spec) {
    if (card.dataset.rendered) return;
    card.dataset.rendered = "1";
    const plot = card.querySelector(".plot");
    const list = spec.series.filter((s) => xs[s.c.xi].length);
    if (!list.length) {
      plot.append(el("p", { className: "empty", text: "No finite values." }));
      return;
    }
    const rel = spec.rel, time = spec.axis === "time" && !rel, off = rel ? sysStart : 0;
    const d = primePage.aligned(xs, list.map((s) => s.c));
    if (off) d[0] = d[0].map((v) => v - off);
    const n = d[0].length;
    const dropped = spec.series.flatMap((s) => s.c.dropped || []).map((v) => v - off).sort((a, b) => a - b);
    const xSeries = rel
      ? { label: "since start", value: (u, v) => v == null ? "" : elapsed(v) + " (" + clock(new Date((v + sysStart) * 1000)) + ")" }
      : { label: time ? "time" : "step", value: time ? "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" : (u, v) => v == null ? "" : String(v) };
    const opts = Object.assign(primePage.chartOptions(plot, 170), {
      scales: { x: { time: time } },
      series: [xSeries].concat(list.map((s, i) => ({
        label: s.label, stroke: PALETTE[i % PALETTE.length], width: 1.25, spanGaps: true,
        points: { show: n <= 60 }, value: (u, v) => num(v),
      }))),
      axes: [rel ? { incrs: ELAPSED_STEPS, values: (u, splits) => splits.map(elapsed) } : {},
        { size: 56, values: (u, splits) => splits.map(tick) }],
      hooks: { draw: [(u) => markDropped(u, dropped)] },
    });
    // The marks must be on the axis even where no value was plotted.
    let lo = d[0][0], hi = d[0][n - 1];
    if (dropped.length) {
      lo = Math.min(lo, dropped[0]);
      hi = Math.max(hi, dropped[dropped.length - 1]);
    }
    if (rel) {
      lo = Math.min(lo, 0);
      hi = Math.max(hi, sysEnd - sysStart);
      opts.cursor.sync = { key: "system" };
    }
    if (dropped.length || rel) opts.scales.x.range = () => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]);
    drawn.push(new uPlot(opts, d, plot));
  }

  function pointsText(points, plotted, dropped) {
    let meta = points + " point" + (points === 1 ? "" : "s");
    if (plotted < points) meta += ", " + plotted + " plotted (min/max per bucket)";
    if (dropped) meta += ", " + dropped + " not finite, not plotted";
    return meta;
  }

  function renderCharts() {
    const root = document.getElementById("charts");
    if (!root) return [];
    const inSystem = new Set(systemPanels.flatMap((p) => p.charts));
    const charts = data.charts.filter((c, i) => !inSystem.has(i));
    const cards = [];
    if (!charts.length) {
      root.append(el("p", { className: "empty", text: inSystem.size ? "This run has no training metrics; its system metrics are below." : "This run has no metrics." }));
    }
    if (data.bad_metric_lines) {
      root.append(el("p", { className: "warn", text: data.bad_metric_lines + " line(s) of metrics.jsonl are not metrics posts and are not shown." }));
    }
    primePage.grouped(root, charts, (c) => {
      const card = el("div", {
        className: "chart" + (c.dropped_count ? " has-dropped" : ""),
        "data-metric": c.name, "data-axis": c.axis, "data-points": c.points, "data-plotted": c.plotted,
        "data-dropped": c.dropped_count || 0,
      },
        el("div", { className: "chart-title", title: c.name, text: c.name }),
        el("div", { className: "chart-meta", text: (c.axis === "time" ? "over wall time · " : "over steps · ") + pointsText(c.points, c.plotted, c.dropped_count) }),
        el("div", { className: "plot" }));
      cards.push([card, { axis: c.axis, series: [{ c: c, label: "value" }] }]);
      return card;
    });
    return cards;
  }

  // ---- the System section: one sub-heading a family, one chart a metric
  // with a line per attribute set, as the page data's panels say ----
  function panelCard(p, cards) {
    const series = p.charts.map((i, k) => ({ c: data.charts[i], label: p.labels[k] }));
    let points = 0, plotted = 0, dropped = 0;
    for (const s of series) {
      points += s.c.points;
      plotted += s.c.plotted;
      dropped += s.c.dropped_count || 0;
    }
    const card = el("div", {
      className: "chart system-chart" + (dropped ? " has-dropped" : ""),
      "data-panel": p.title, "data-axis": p.axis, "data-series": series.length,
    },
      el("div", { className: "chart-title", title: series.map((s) => s.c.name).join("\n"), text: p.title }),
      el("div", { className: "chart-meta", text: (p.axis === "time" ? "since the run's first row · " : "over steps · ") +
        series.length + " series, " + pointsText(points, plotted, dropped) }),
      el("div", { className: "plot" }),
      // Each line's metric and counts, as a lone chart's data attributes
      // give them, for whoever reads the page's structure.
      ...series.map((s) => el("data", {
        hidden: true, value: s.c.name, "data-metric": s.c.name, "data-label": s.label, "data-axis": s.c.axis,
        "data-points": s.c.points, "data-plotted": s.c.plotted, "data-dropped": s.c.dropped_count || 0,
      })));
    cards.push([card, { axis: p.axis, series: series, rel: p.axis === "time" }]);
    return card;
  }

  function renderSystem() {
    const root = document.getElementById("system-charts");
    if (!root) return [];
    const cards = [];
    for (const f of data.system || []) {
      const grid = el("div", { className: "grid" });
      for (const p of f.panels) grid.append(panelCard(p, cards));
      const family = el("section", { className: "family", "data-family": f.name }, el("h3", { text: f.title }), grid);
      const totals = f.totals || [];
      if (totals.length) {
        const more = el("div", { className: "grid" });
        for (const p of totals) more.append(panelCard(p, cards));
        family.append(el("details", { className: "totals" },
          el("summary", { text: "Histogram totals (" + totals.length + " chart" + (totals.length === 1 ? "" : "s") + "): count, sum, mean, min and max; a scraped histogram's count from its server's start" }),
          more));
      }
      root.append(family);
    }
    return cards;
  }

  // ---- sample tables ----
  const columns = {
    sample_id: { label: "sample_id", cell: (r) => el("code", { text: r.sample_id }) },
    tag: { label: "tag", cell: (r) => r.tag || "" },
    env: { label: "env", cell: (r) => r.env || "" },
    task: { label: "task", cell: (r) => collapsed(r.task) },
    reward: { label: "reward", cell: (r) => num(r.reward), num: true },
    advantage: { label: "advantage", cell: (r) => num(r.advantage), num: true },
    prompt: { label: "prompt", cell: (r) => collapsed(r.prompt) },
    completion: { label: "completion", cell: (r) => collapsed(r.completion) },
  };

  // table renders rows a page at a time.
  function table(id, rows, cols, attrs) {
    return paged(el("div", { className: "table-wrap" }), rows.length, PAGE_ROWS, "row", (lo, hi) => {
      const body = el("tbody");
      for (const r of rows.slice(lo, hi)) {
        const tr = el("tr", { "data-sample-id": r.sample_id });
        for (const c of cols) tr.append(el("td", { className: columns[c].num ? "num" : "" }, columns[c].cell(r)));
        body.append(tr);
      }
      const head = el("tr");
      for (const c of cols) head.append(el("th", { text: columns[c].label }));
      return el("table", Object.assign({ id: id, className: "samples", "data-rows": rows.length }, attrs), el("thead", {}, head), body);
    });
  }

  function renderSteps() {
    const root = document.getElementById("sample-steps");
    if (!root) return;
    const steps = data.steps || [];
    if (!steps.length) {
      root.append(el("p", { className: "empty", text: "This run has no sample objects." }));
      return;
    }
    const picker = el("select", { id: "step-picker" });
    for (const s of steps) {
      picker.append(el("option", { value: String(s.step), text: "step " + s.step + " — " + s.rows.length + " rows, " + s.objects + " object" + (s.objects === 1 ? "" : "s") }));
    }
    const holder = el("div", { id: "step-table" });
    function show() {
      const s = steps.find((x) => String(x.step) === picker.value);
      const kids = [];
      if (s.error) kids.push(el("p", { className: "warn", text: "An object of this step could not be read: " + s.error }));
      kids.push(table("samples-table", s.rows, ["sample_id", "tag", "env", "task", "reward", "advantage", "prompt", "completion"],
        { "data-step": s.step, "data-objects": s.objects }));
      holder.replaceChildren(...kids);
    }
    picker.addEventListener("change", show);
    picker.value = String(steps[steps.length - 1].step);
    root.append(el("label", { className: "picker" }, "Step ", picker), holder);
    show();
  }

  function renderEval() {
    const root = document.getElementById("eval-samples");
    if (!root || !data.eval) return;
    if (data.eval.bad_samples) {
      root.append(el("p", { className: "warn", text: data.eval.bad_samples + " line(s) of samples.jsonl are not samples and are not shown." }));
    }
    root.append(table("eval-samples-table", data.eval.samples || [], ["sample_id", "task", "reward", "prompt", "completion"], {}));
  }

  const cards = renderCharts().concat(renderSystem());
  const tDom = performance.now();
  renderSteps();
  renderEval();

  primePage.drawWhenSeen(cards, draw);
  primePage.resizeWith(drawn, 170);
  primePage.ready(t0, tParsed, tDom);
})();
