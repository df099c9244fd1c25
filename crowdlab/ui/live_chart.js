// crowdlab's one chart element: a Plotly graph mounted once, then updated in place with Plotly.react.
//
// Streamlit calls this function each time the element's data changes (a Step click sends a new figure); the
// element's DOM stays, so the graph div is created once and every later figure is applied to it. Bars, dots and
// curve ends glide to their new values with Plotly's layout.transition; heatmap cells, which Plotly does not
// transition, are tweened here (their colours move from the old values to the new in data.motion ms). Motion is
// off when data.motion is 0 and when the browser asks for reduced motion.
//
// window.__crowdlabCharts counts what happened ({mounts, draws, frames}, totals and per chart key) so that the
// browser tests and benchmarks/bench_click.py can assert "mounted once, one draw per changed figure".

const STATS = (window.__crowdlabCharts = window.__crowdlabCharts || { mounts: 0, draws: 0, frames: 0, byKey: {} });

// The look Streamlit's front end gives st.plotly_chart's figures (its light theme), with real colours (Streamlit's
// Plotly template holds placeholders that only its own chart element replaces). Only what a figure leaves unset
// comes from here; the figures arrive with an empty template.
const FONT = '"Source Sans", "Source Sans Pro", sans-serif';
const GRID = "#e6eaf1";
const AXIS = { gridcolor: GRID, zerolinecolor: GRID, linecolor: GRID, automargin: true };
const TEMPLATE = {
  layout: {
    colorway: ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0",
      "#d5dae5"],
    font: { family: FONT, color: "#31333f", size: 14 },
    hoverlabel: { font: { family: FONT } },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: AXIS,
    yaxis: AXIS,
  },
  data: { scatter: [{ marker: { line: { width: 0 } } }] },
};

function loadPlotly(src) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__crowdlabPlotly) {
    window.__crowdlabPlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.async = true;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => {
        window.__crowdlabPlotly = null;
        reject(new Error("plotly.js could not be loaded from " + src));
      };
      document.head.appendChild(s);
    });
  }
  return window.__crowdlabPlotly;
}

function count(key, what) {
  STATS[what] += 1;
  const k = (STATS.byKey[key] = STATS.byKey[key] || { mounts: 0, draws: 0, frames: 0 });
  k[what] += 1;
}

function reducedMotion() {
  return !!(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
}

const TYPED = { f8: Float64Array, f4: Float32Array, i4: Int32Array, i2: Int16Array, i1: Int8Array,
  u4: Uint32Array, u2: Uint16Array, u1: Uint8Array, u1c: Uint8ClampedArray };

function plain(v) {
  // plotly.py writes numpy arrays as {dtype, bdata[, shape]}; transitions and tweens need plain arrays
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object") {
    if (typeof v.bdata === "string" && TYPED[v.dtype]) {
      const bin = atob(v.bdata);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const flat = Array.from(new TYPED[v.dtype](bytes.buffer));
      const shape = v.shape === undefined ? [] : String(v.shape).split(",").map(Number);
      if (shape.length === 2) {
        const rows = [];
        for (let r = 0; r < shape[0]; r++) rows.push(flat.slice(r * shape[1], (r + 1) * shape[1]));
        return rows;
      }
      return flat;
    }
    const out = {};
    for (const k of Object.keys(v)) out[k] = plain(v[k]);
    return out;
  }
  return v;
}

function sameShape(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!Array.isArray(a[i]) || !Array.isArray(b[i]) || a[i].length !== b[i].length) return false;
  }
  return true;
}

function toRows(z) {
  // a heatmap's z as plain nested arrays (plotly.js may hold typed arrays once it has decoded a figure)
  if (!z) return null;
  return Array.from(z, (row) => (row && row.length !== undefined ? Array.from(row) : row));
}

function tweenHeatmaps(Plotly, gd, key, before, ms, token) {
  // glide each heatmap's z from its previous values (before[i]) to the ones just drawn
  const idx = [];
  const from = [];
  const to = [];
  gd.data.forEach((t, i) => {
    const z = toRows(t.z);
    if (t.type === "heatmap" && before[i] && sameShape(before[i], z)) {
      idx.push(i);
      from.push(before[i]);
      to.push(z);
    }
  });
  if (!idx.length) return;
  // at most FRAMES redraws: each restyle redraws the heatmap's cells and their numbers
  const FRAMES = 8;
  const t0 = performance.now();
  let last = -1;
  const ease = (u) => (u < 0.5 ? 4 * u * u * u : 1 - Math.pow(-2 * u + 2, 3) / 2);
  const frame = (now) => {
    if (gd.__clToken !== token) return; // a newer figure took over
    const u = Math.min(1, Math.ceil(((now - t0) / ms) * FRAMES) / FRAMES);
    if (u === last) {
      requestAnimationFrame(frame);
      return;
    }
    last = u;
    const e = ease(u);
    const zs = from.map((f, j) =>
      f.map((row, r) => row.map((v, c) => (v === null || to[j][r][c] === null ? to[j][r][c] : v + (to[j][r][c] - v) * e)))
    );
    Plotly.restyle(gd, { z: zs }, idx);
    count(key, "frames");
    if (u < 1) requestAnimationFrame(frame);
  };
  // start from the old values, then move
  Plotly.restyle(gd, { z: from }, idx);
  requestAnimationFrame(frame);
}

function draw(Plotly, gd, spec, data) {
  const key = data.key;
  const layout = spec.layout || {};
  if (!layout.template || !layout.template.layout) layout.template = TEMPLATE; // figures come with none
  const config = Object.assign({ responsive: true, displaylogo: false }, spec.config || {}, data.config || {});
  const ms = reducedMotion() ? 0 : data.motion || 0;
  const token = (gd.__clToken = (gd.__clToken || 0) + 1);
  if (!gd.__clDrawn) {
    gd.__clDrawn = true;
    gd.__clLayoutJson = JSON.stringify(layout);
    count(key, "mounts");
    count(key, "draws");
    return Plotly.newPlot(gd, spec.data || [], layout, config);
  }
  const layoutJson = JSON.stringify(layout);
  const layoutChanged = layoutJson !== gd.__clLayoutJson;
  gd.__clLayoutJson = layoutJson;
  if (ms <= 0) {
    count(key, "draws");
    return Plotly.react(gd, spec.data || [], layout, config);
  }
  // Plotly animates data and axis ranges only, and leaves the rest of a new layout (titles, annotations) undrawn
  // during a transition: apply a changed layout first, on the traces as they are, then glide the traces.
  const before = gd.data.map((t) => (t.type === "heatmap" ? toRows(t.z) : null));
  let first = Promise.resolve();
  if (layoutChanged) {
    count(key, "draws");
    first = Plotly.react(gd, gd.data, Object.assign({}, layout), config);
  }
  return first.then(() => {
    if (gd.__clToken !== token) return;
    count(key, "draws");
    const moving = Object.assign({}, layout, { transition: { duration: ms, easing: "cubic-in-out" } });
    return Plotly.react(gd, spec.data || [], moving, config).then(() => tweenHeatmaps(Plotly, gd, key, before, ms, token));
  });
}

export default function (component) {
  const { parentElement, data } = component;
  if (data && data.preload && !window.Plotly) {
    // no figure yet: load plotly.js while the page is idle, into the promise the charts await (live_chart.preload)
    const start = () => loadPlotly(data.preload).catch(() => {});
    if (window.requestIdleCallback) window.requestIdleCallback(start, { timeout: 1500 });
    else setTimeout(start, 200);
  }
  if (!data || !data.spec) return;
  let gd = parentElement.querySelector("div.cl-live-chart");
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "cl-live-chart";
    gd.style.width = "100%";
    parentElement.appendChild(gd);
    if (window.ResizeObserver) {
      // a chart first drawn in a hidden tab or a narrow column follows its box's width
      let last = 0;
      new ResizeObserver((entries) => {
        const w = Math.round(entries[0].contentRect.width);
        if (gd.__clDrawn && w > 0 && Math.abs(w - last) > 2 && window.Plotly) {
          last = w;
          window.Plotly.Plots.resize(gd);
        } else {
          last = w;
        }
      }).observe(gd);
    }
  }
  gd.dataset.key = data.key;
  gd.style.height = data.height + "px";
  const spec = plain(JSON.parse(data.spec));
  const seq = (gd.__clSeq = (gd.__clSeq || 0) + 1);
  loadPlotly(data.src)
    .then((Plotly) => {
      if (seq !== gd.__clSeq) return; // a newer figure arrived while plotly.js was loading
      return draw(Plotly, gd, spec, data);
    })
    .catch((err) => {
      gd.textContent = String(err && err.message ? err.message : err);
    });
}
