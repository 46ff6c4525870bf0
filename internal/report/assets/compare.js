// The compare page's own script: it draws the runs' data, embedded as JSON
// in #compare-data, with uPlot (each run a colour, in every chart), and
// sets their samples side by side. Text goes in through textContent only.
(function () {
  "use strict";
  const t0 = performance.now();
  const data = JSON.parse(document.getElementById("compare-data").textContent);
  const tParsed = performance.now();
  const { el, num, tick, ys, colour, elapsed, collapsed, paged, ELAPSED_STEPS } = primePage;
  const xs = primePage.decodeXs(data.xs);
  const PAGE_PROMPTS = 20;
  const shown = data.runs.map(() => true);
  const drawn = [], drawnRuns = []; // each chart drawn, and the run of each of its series

  // ---- the runs: a colour each, and a switch that takes a run out of
  // every chart and table without reloading ----
  for (const sw of document.querySelectorAll("[data-run] > .swatch")) {
    sw.style.background = colour(+sw.parentElement.dataset.run);
  }
  function setShown(run, on) {
    shown[run] = on;
    drawn.forEach((u, i) => drawnRuns[i].forEach((r, k) => { if (r === run) u.setSeries(k + 1, { show: on }); }));
    for (const e of document.querySelectorAll('main [data-run="' + run + '"]')) e.classList.toggle("run-off", !on);
  }
  const toggles = document.getElementById("run-toggles");
  data.runs.forEach((label, i) => {
    const box = el("input", { type: "checkbox", checked: true, "data-toggle": i, onchange: () => setShown(i, box.checked) });
    toggles.append(el("label", {}, box, el("span", { className: "swatch", style: "background:" + colour(i) }), label));
  });
  const all = document.getElementById("config-all");
  if (all) all.addEventListener("change", () => document.getElementById("config-table").classList.toggle("show-all", all.checked));

  // ---- one chart a metric, a line a run ----
  function draw(card, c) {
    if (card.dataset.rendered) return;
    card.dataset.rendered = "1";
    const plot = card.querySelector(".plot");
    const list = c.series.filter((s) => xs[s.xi].length);
    if (!list.length) {
      plot.append(el("p", { className: "empty", text: "No finite values." }));
      return;
    }
    const d = primePage.aligned(xs, list);
    const time = c.axis === "time";
    const opts = Object.assign(primePage.chartOptions(plot, 190), {
      scales: { x: { time: false } },
      series: [time ? { label: "since start", value: (u, v) => v == null ? "" : elapsed(v) } : { label: "step", value: (u, v) => v == null ? "" : String(v) }]
        .concat(list.map((s) => ({
          label: data.runs[s.run], stroke: colour(s.run), width: 1.25, spanGaps: true, show: shown[s.run],
          points: { show: d[0].length <= 60 }, value: (u, v) => num(v),
        }))),
      axes: [time ? { incrs: ELAPSED_STEPS, values: (u, splits) => splits.map(elapsed) } : {},
        { size: 56, values: (u, splits) => splits.map(tick) }],
    });
    drawn.push(new uPlot(opts, d, plot));
    drawnRuns.push(list.map((s) => s.run));
  }

  function renderCharts() {
    const root = document.getElementById("charts");
    if (!root) return [];
    if (!data.charts.length) root.append(el("p", { className: "empty", text: "None of these runs has metrics." }));
    const cards = [];
    primePage.grouped(root, data.charts, (c) => {
      const missing = (c.missing || []).map((i) => data.runs[i]);
      const points = c.series.map((s) => s.points).reduce((a, b) => a + b, 0);
      const card = el("div", {
        className: "chart compare-chart", "data-metric": c.name, "data-axis": c.axis, "data-series": c.series.length,
        "data-missing": JSON.stringify(missing),
      },
        el("div", { className: "chart-title", title: c.name, text: c.name }),
        el("div", { className: "chart-meta", text: (c.axis === "time" ? "since each run's start · " : "over steps · ") +
          c.series.length + " run" + (c.series.length === 1 ? "" : "s") + ", " + points + " points" }),
        missing.length ? el("div", { className: "chart-missing", text: "Not in " + missing.join(", ") + ": no such metric." }) : null,
        el("div", { className: "plot" }),
        // Each line's run and counts, for whoever reads the page's structure.
        ...c.series.map((s) => el("data", {
          hidden: true, value: data.runs[s.run], "data-series-run": s.run, "data-label": data.runs[s.run],
          "data-points": s.points, "data-plotted": s.plotted, "data-dropped": s.dropped || 0,
        })));
      cards.push([card, c]);
      return card;
    });
    return cards;
  }

  // ---- samples side by side ----
  function answer(a) {
    let meta = "#" + a.sample_id + " · reward " + num(a.reward);
    if (a.advantage != null) meta += " · advantage " + num(a.advantage);
    if (a.tag) meta += " · " + a.tag;
    return el("div", { className: "answer", "data-sample-id": a.sample_id },
      el("div", { className: "answer-meta", text: meta }), collapsed(a.completion));
  }

  function sideBySide(m) {
    const head = el("tr", {}, el("th", { text: "prompt" }));
    for (const r of m.runs) head.append(el("th", { "data-run": r }, el("span", { className: "swatch", style: "background:" + colour(r) }), data.runs[r]));
    return paged(el("div", { className: "table-wrap" }), m.prompts.length, PAGE_PROMPTS, "prompt", (lo, hi) => {
      const body = el("tbody");
      m.prompts.slice(lo, hi).forEach((p, k) => {
        const asked = m.runs.filter((r) => p.rows[r].length).length;
        const tr = el("tr", { "data-prompt": lo + k, "data-task": p.task || "", "data-asked": asked },
          el("td", { className: "prompt" }, p.task ? el("div", { className: "answer-meta", text: "task " + p.task }) : null, collapsed(p.prompt)));
        for (const r of m.runs) {
          const rows = p.rows[r];
          tr.append(el("td", { "data-run": r, className: shown[r] ? "" : "run-off" },
            ...(rows.length ? rows.map(answer) : [el("span", { className: "empty", text: "not asked" })])));
        }
        body.append(tr);
      });
      for (const th of head.querySelectorAll("[data-run]")) th.classList.toggle("run-off", !shown[+th.dataset.run]);
      return el("table", { id: "compare-samples", className: "side", "data-step": m.step, "data-prompts": m.prompts.length },
        el("thead", {}, head), body);
    });
  }

  function renderSteps() {
    const root = document.getElementById("sample-steps");
    const steps = data.steps;
    if (!steps.length) {
      root.append(el("p", { className: "empty", text: data.kind === "eval" ? "Fewer than two of these evaluations have samples." : "No step was sampled by two of these runs." }));
      return;
    }
    const picker = el("select", { id: "compare-step-picker" });
    for (const s of steps) {
      const matched = s.prompts.filter((p) => s.runs.filter((r) => p.rows[r].length).length > 1).length;
      picker.append(el("option", { value: String(s.step), text: (s.step < 0 ? "all samples" : "step " + s.step) + " — " + s.runs.length + " runs, " +
        s.prompts.length + " prompts, " + matched + " asked by several" }));
    }
    const holder = el("div", { id: "compare-step" });
    function show() {
      const m = steps.find((x) => String(x.step) === picker.value);
      const kids = (m.errors || []).map((e) => el("p", { className: "warn", text: "An object could not be read: " + e }));
      kids.push(sideBySide(m));
      holder.replaceChildren(...kids);
    }
    picker.addEventListener("change", show);
    // The latest of the steps the most runs sampled.
    let best = steps[0];
    for (const s of steps) if (s.runs.length >= best.runs.length) best = s;
    picker.value = String(best.step);
    root.append(el("label", { className: "picker" }, data.kind === "eval" ? "Samples " : "Step ", picker), holder);
    show();
  }

  const cards = renderCharts();
  const tDom = performance.now();
  renderSteps();
  primePage.drawWhenSeen(cards, draw);
  primePage.resizeWith(drawn, 190);
  primePage.ready(t0, tParsed, tDom);
})();
