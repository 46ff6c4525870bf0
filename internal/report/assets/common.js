// What the run page (report.js) and the compare page (compare.js) share:
// building elements (text goes in through textContent only), number and
// time formats, the embedded curves' decoding, paging, drawing charts as
// they scroll into view, and the ready mark the browser tests wait for.
window.primePage = (function () {
  "use strict";

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

  // A chart's x are xs[xi], shared by the curves of the same steps; steps
  // come delta-coded (dx): each after the first is its distance from the
  // one before.
  function decodeXs(list) {
    return list.map((e) => {
      const v = e.v;
      if (e.dx) for (let i = 1; i < v.length; i++) v[i] += v[i - 1];
      return v;
    });
  }

  // A curve's y are little-endian float32s in base64, decoded when drawn.
  function ys(c) {
    const bin = atob(c.y);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return Array.from(new Float32Array(u8.buffer));
  }

  // aligned puts curves ({xi, y}) on one x: the x they share (one scrape
  // is one row, so a system chart's GPUs share theirs; runs of the same
  // steps, thinned alike, share theirs), or their x joined, each line
  // spanning the points that are the others'.
  function aligned(xs, curves) {
    const xi = curves[0].xi;
    if (curves.every((c) => c.xi === xi)) return [xs[xi]].concat(curves.map(ys));
    return uPlot.join(curves.map((c) => [xs[c.xi], ys(c)]));
  }

  // chartOptions are what every chart has: its size, a live legend, and a
  // drag that zooms on x.
  function chartOptions(plot, height) {
    return { width: Math.max(240, plot.clientWidth), height: height, legend: { show: true, live: true }, cursor: { drag: { x: true, y: false } } };
  }

  // grouped puts a card a chart into root, in a section a group (the
  // prefix of its name: reward/, loss/, …; "other" last): card(c) makes one.
  function grouped(root, charts, card) {
    const groups = new Map();
    for (const c of charts) {
      if (!groups.has(c.group)) groups.set(c.group, []);
      groups.get(c.group).push(c);
    }
    const names = [...groups.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b));
    for (const g of names) {
      const grid = el("div", { className: "grid" });
      const list = groups.get(g);
      root.append(el("section", { className: "group", "data-group": g },
        el("h3", { text: (g ? g + "/" : "other") + "  (" + list.length + ")" }), grid));
      for (const c of list) grid.append(card(c));
    }
  }

  // Lines told apart by colour: the first ten are the run page's; a
  // comparison of more runs takes the rest.
  const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569", "#ea580c",
    "#1e3a8a", "#9f1239", "#166534", "#92400e", "#5b21b6", "#155e75", "#a21caf", "#3f6212", "#0f172a", "#b45309"];
  function colour(i) {
    return i < PALETTE.length ? PALETTE[i] : "hsl(" + Math.round((i * 137.508) % 360) + ", 65%, 42%)";
  }

  // Tick steps of time counted from a start, in seconds: round minutes and
  // hours, as W&B's relative time has them.
  const ELAPSED_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

  // elapsed writes seconds since a start: 45s, 12m30s, 2h05m.
  function elapsed(v) {
    const sign = v < 0 ? "-" : "", s = Math.round(Math.abs(v));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (h) return sign + h + "h" + (m ? String(m).padStart(2, "0") + "m" : "");
    if (m) return sign + m + "m" + (sec ? String(sec).padStart(2, "0") + "s" : "");
    return sign + sec + "s";
  }

  // collapsed shows a long text's first line until opened.
  function collapsed(text) {
    if (!text) return "";
    const first = text.replace(/\s+/g, " ").slice(0, 80);
    return el("details", { className: "cell" },
      el("summary", { text: first + (text.length > 80 ? "…" : "") }),
      el("pre", { text: text }));
  }

  // paged shows count items size at a time in wrap, with a pager above:
  // render(lo, hi) makes the element of items lo to hi, so a step of
  // thousands of episodes makes a small DOM.
  function paged(wrap, count, size, noun, render) {
    let page = 0;
    const pages = Math.max(1, Math.ceil(count / size));
    function show() {
      const pager = el("div", { className: "pager" });
      if (pages > 1) {
        const prev = el("button", { text: "‹ previous", disabled: page === 0, onclick: () => { page--; show(); } });
        const next = el("button", { text: "next ›", disabled: page === pages - 1, onclick: () => { page++; show(); } });
        pager.append(prev, el("span", { text: " " + noun + "s " + (page * size + 1) + "–" + Math.min(count, (page + 1) * size) + " of " + count + " " }), next);
      } else {
        pager.append(el("span", { text: count + " " + noun + (count === 1 ? "" : "s") }));
      }
      wrap.replaceChildren(pager, render(page * size, Math.min(count, (page + 1) * size)));
    }
    show();
    return wrap;
  }

  // drawWhenSeen draws the cards on screen now and the rest as they scroll
  // into view: a page of 500 metrics would otherwise draw 500 canvases
  // before it shows. cards are [card, spec] pairs; draw(card, spec).
  function drawWhenSeen(cards, draw) {
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (e.isIntersecting) {
          io.unobserve(e.target);
          draw(e.target, e.target.__chart);
        }
      }
    }, { rootMargin: "400px 0px" });
    for (const [card, spec] of cards) {
      card.__chart = spec;
      // A card under a closed fold has no box yet: it is drawn when opened.
      const box = card.getBoundingClientRect();
      if (box.height > 0 && box.top < innerHeight) draw(card, spec);
      else io.observe(card);
    }
  }

  // resizeWith keeps the drawn charts as wide as their cards.
  function resizeWith(drawn, height) {
    let resizing = 0;
    addEventListener("resize", () => {
      clearTimeout(resizing);
      resizing = setTimeout(() => {
        for (const u of drawn) u.setSize({ width: Math.max(240, u.root.parentElement.clientWidth), height: height });
      }, 100);
    });
  }

  // ready marks the page ready, with how long each part took, for the
  // measurements in docs/prime-sync.md and the browser tests.
  function ready(t0, tParsed, tDom) {
    const tReady = performance.now();
    document.body.dataset.timings = "script start " + Math.round(t0) + " ms, data parsed " + Math.round(tParsed - t0) +
      " ms, page built " + Math.round(tDom - tParsed) + " ms, charts on screen drawn " + Math.round(tReady - tDom) + " ms";
    document.body.dataset.readyMs = String(Math.round(tReady));
    document.body.dataset.ready = "1";
  }

  return { el, num, tick, decodeXs, ys, aligned, chartOptions, grouped, PALETTE, colour, ELAPSED_STEPS, elapsed, collapsed, paged, drawWhenSeen, resizeWith, ready };
})();
