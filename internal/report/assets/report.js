// The report page's own script: it draws the run's data, embedded as JSON
// in #report-data, with uPlot. Text goes in through textContent only.
(function () {
  "use strict";
  const t0 = performance.now();
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const tParsed = performance.now();
  const PAGE_ROWS = 50;
  // A chart's x are xs[xi], shared by the curves of the same steps; steps
  // come delta-coded (dx): each after the first is its distance from the
  // one before.
  const xs = data.xs.map((e) => {
    const v = e.v;
    if (e.dx) for (let i = 1; i < v.length; i++) v[i] += v[i - 1];
    return v;
  });
  // A chart's y are little-endian float32s in base64, decoded when drawn.
  function ys(c) {
    const bin = atob(c.y);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return Array.from(new Float32Array(u8.buffer));
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else if (k.startsWith("data-")) e.setAttribute(k, String(v));
      else e[k] = v;
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  function num(v) {
    return v == null ? "" : String(Number(v.toPrecision(6)));
  }

  // tick labels that stay apart for small values (a learning rate of 1e-6)
  function tick(v) {
    if (v === 0) return "0";
    const a = Math.abs(v);
    return a < 1e-3 || a >= 1e6 ? v.toExponential(1) : String(Number(v.toPrecision(4)));
  }

  // ---- metric curves ----
  const drawn = [];

  function markDropped(u, c) {
    if (!c.dropped || !c.dropped.length) return;
    const ctx = u.ctx, y = u.bbox.top + u.bbox.height, s = 5 * devicePixelRatio;
    ctx.save();
    ctx.fillStyle = "#dc2626";
    for (const x of c.dropped) {
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

  function draw(card, c) {
    if (card.dataset.rendered) return;
    card.dataset.rendered = "1";
    const plot = card.querySelector(".plot");
    const x = xs[c.xi];
    if (!x.length) {
      plot.append(el("p", { className: "empty", text: "No finite values." }));
      return;
    }
    const time = c.axis === "time";
    const opts = {
      width: Math.max(240, plot.clientWidth),
      height: 170,
      scales: { x: { time: time } },
      legend: { show: true, live: true },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: time ? "time" : "step", value: time ? "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" : (u, v) => v == null ? "" : String(v) },
        { label: "value", stroke: "#2563eb", width: 1.25, points: { show: x.length <= 60 }, value: (u, v) => num(v) },
      ],
      axes: [{}, { size: 56, values: (u, splits) => splits.map(tick) }],
      hooks: { draw: [(u) => markDropped(u, c)] },
    };
    if (c.dropped && c.dropped.length) {
      // The marks must be on the axis even where no value was plotted.
      const lo = Math.min(x[0], c.dropped[0]), hi = Math.max(x[x.length - 1], c.dropped[c.dropped.length - 1]);
      opts.scales.x.range = (u, a, b) => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]);
    }
    drawn.push(new uPlot(opts, [x, ys(c)], plot));
  }

  function renderCharts() {
    const root = document.getElementById("charts");
    if (!root) return [];
    const groups = new Map();
    for (const c of data.charts) {
      if (!groups.has(c.group)) groups.set(c.group, []);
      groups.get(c.group).push(c);
    }
    const names = [...groups.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b));
    const cards = [];
    if (!data.charts.length) root.append(el("p", { className: "empty", text: "This run has no metrics." }));
    if (data.bad_metric_lines) {
      root.append(el("p", { className: "warn", text: data.bad_metric_lines + " line(s) of metrics.jsonl are not metrics posts and are not shown." }));
    }
    for (const g of names) {
      const grid = el("div", { className: "grid" });
      const list = groups.get(g);
      root.append(el("section", { className: "group", "data-group": g },
        el("h3", { text: (g ? g + "/" : "other") + "  (" + list.length + ")" }), grid));
      for (const c of list) {
        const thinned = c.plotted < c.points;
        let meta = c.points + " point" + (c.points === 1 ? "" : "s");
        if (thinned) meta += ", " + c.plotted + " plotted (min/max per bucket)";
        if (c.dropped_count) meta += ", " + c.dropped_count + " not finite, not plotted";
        const card = el("div", {
          className: "chart" + (c.dropped_count ? " has-dropped" : ""),
          "data-metric": c.name, "data-axis": c.axis, "data-points": c.points, "data-plotted": c.plotted,
          "data-dropped": c.dropped_count || 0,
        },
          el("div", { className: "chart-title", title: c.name, text: c.name }),
          el("div", { className: "chart-meta", text: (c.axis === "time" ? "over wall time · " : "over steps · ") + meta }),
          el("div", { className: "plot" }));
        grid.append(card);
        cards.push([card, c]);
      }
    }
    return cards;
  }

  // ---- sample tables ----
  function collapsed(text) {
    if (!text) return "";
    const first = text.replace(/\s+/g, " ").slice(0, 80);
    return el("details", { className: "cell" },
      el("summary", { text: first + (text.length > 80 ? "…" : "") }),
      el("pre", { text: text }));
  }

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

  // table renders rows a page at a time, so a step of thousands of
  // episodes makes a small DOM.
  function table(id, rows, cols, attrs) {
    const wrap = el("div", { className: "table-wrap" });
    let page = 0;
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
    function show() {
      const body = el("tbody");
      for (const r of rows.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS)) {
        const tr = el("tr", { "data-sample-id": r.sample_id });
        for (const c of cols) tr.append(el("td", { className: columns[c].num ? "num" : "" }, columns[c].cell(r)));
        body.append(tr);
      }
      const head = el("tr");
      for (const c of cols) head.append(el("th", { text: columns[c].label }));
      const t = el("table", Object.assign({ id: id, className: "samples", "data-rows": rows.length }, attrs), el("thead", {}, head), body);
      const pager = el("div", { className: "pager" });
      if (pages > 1) {
        const prev = el("button", { text: "‹ previous", disabled: page === 0, onclick: () => { page--; show(); } });
        const next = el("button", { text: "next ›", disabled: page === pages - 1, onclick: () => { page++; show(); } });
        pager.append(prev, el("span", { text: " rows " + (page * PAGE_ROWS + 1) + "–" + Math.min(rows.length, (page + 1) * PAGE_ROWS) + " of " + rows.length + " " }), next);
      } else {
        pager.append(el("span", { text: rows.length + " row" + (rows.length === 1 ? "" : "s") }));
      }
      wrap.replaceChildren(pager, t);
    }
    show();
    return wrap;
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

  const cards = renderCharts();
  const tDom = performance.now();
  renderSteps();
  renderEval();

  // The charts on screen are drawn now, the rest as they scroll into view:
  // a page of 500 metrics would otherwise draw 500 canvases before it shows.
  const io = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) {
        io.unobserve(e.target);
        draw(e.target, e.target.__chart);
      }
    }
  }, { rootMargin: "400px 0px" });
  for (const [card, c] of cards) {
    card.__chart = c;
    if (card.getBoundingClientRect().top < innerHeight) draw(card, c);
    else io.observe(card);
  }
  let resizing = 0;
  addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const u of drawn) u.setSize({ width: Math.max(240, u.root.parentElement.clientWidth), height: 170 });
    }, 100);
  });
  const tReady = performance.now();
  // How long each part took, for the measurements in docs/prime-sync.md.
  document.body.dataset.timings = "script start " + Math.round(t0) + " ms, data parsed " + Math.round(tParsed - t0) +
    " ms, page built " + Math.round(tDom - tParsed) + " ms, charts on screen drawn " + Math.round(tReady - tDom) + " ms";
  document.body.dataset.readyMs = String(Math.round(tReady));
  document.body.dataset.ready = "1";
})();
