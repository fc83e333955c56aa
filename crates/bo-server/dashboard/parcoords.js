// Parallel coordinates over every parameter and every metric, on one canvas: a line per trial
// coloured by the first metric (best darkest); below the axis of a conditional parameter, a slot
// where the lines of trials that leave it inactive pass. Drag along an axis to keep a range (a
// brush); double-click the axis to drop it. The brushes filter the trials table below.

import { short } from "./format.js";

const PAD = { top: 40, bottom: 50, left: 40, right: 60 };
/** How far below an axis its "inactive" slot lies, in pixels. */
const INACTIVE_DROP = 30;
/** Lines drawn at most, and the colour bands they are stroked in. */
const MAX_LINES = 12000;
const BANDS = 16;

/** Every parameter of a Vertex spec's tree, in pre-order, with how to place its values. */
export function axesOf(parameters) {
  const out = [];
  const walk = (ps, conditional) => {
    for (const p of ps) {
      const log = (p.scaleType || "").includes("LOG");
      const parent = (p.conditionalParameterSpecs || []).length > 0;
      const common = { id: p.parameterId, parent, conditional, log };
      if (p.doubleValueSpec) out.push({ ...common, kind: "double", min: p.doubleValueSpec.minValue ?? 0, max: p.doubleValueSpec.maxValue });
      else if (p.integerValueSpec) out.push({ ...common, kind: "integer", min: Number(p.integerValueSpec.minValue ?? 0), max: Number(p.integerValueSpec.maxValue) });
      else if (p.discreteValueSpec) out.push({ ...common, kind: "discrete", min: Math.min(...p.discreteValueSpec.values), max: Math.max(...p.discreteValueSpec.values) });
      else if (p.categoricalValueSpec) out.push({ ...common, kind: "categorical", categories: p.categoricalValueSpec.values });
      walk((p.conditionalParameterSpecs || []).map((c) => c.parameterSpec), true);
    }
  };
  walk(parameters, false);
  return out;
}

/** A value's place on its axis, 0 (bottom) to 1 (top); null when it has none. */
function place(axis, v) {
  if (v === null || v === undefined) return null;
  if (axis.categories) {
    const k = axis.categories.indexOf(v);
    return k < 0 ? null : (k + 0.5) / axis.categories.length;
  }
  if (axis.log && axis.min > 0) return (Math.log(v) - Math.log(axis.min)) / (Math.log(axis.max) - Math.log(axis.min) || 1);
  return (v - axis.min) / (axis.max - axis.min || 1);
}

export class ParallelCoordinates {
  constructor(trials, spec, onBrush) {
    this.trials = trials;
    this.metric = spec.metrics[0];
    this.metrics = spec.metrics;
    this.axes = axesOf(spec.parameters);
    this.onBrush = onBrush;
    this.brushes = new Map();
    this.canvas = document.createElement("canvas");
    this.canvas.id = "parcoords";
    this.canvas.height = 350;
    this.root = document.createElement("div");
    this.root.className = "chart";
    this.root.append(this.canvas);
    let drag = null;
    this.canvas.addEventListener("mousedown", (e) => {
      const axis = this.axisAt(e.offsetX);
      if (axis !== null) drag = { axis, from: this.valueAt(e.offsetY) };
    });
    this.canvas.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const to = this.valueAt(e.offsetY);
      this.brushes.set(drag.axis, [Math.min(drag.from, to), Math.max(drag.from, to)]);
      this.draw();
    });
    window.addEventListener("mouseup", () => {
      if (!drag) return;
      drag = null;
      this.onBrush();
    });
    this.canvas.addEventListener("dblclick", (e) => {
      const axis = this.axisAt(e.offsetX);
      if (axis !== null && this.brushes.delete(axis)) {
        this.draw();
        this.onBrush();
      }
    });
  }

  /** A metric's axis, scaled to the values seen. */
  metricAxis(metric) {
    let min = Infinity, max = -Infinity;
    for (const v of this.trials.metrics.get(metric.metricId) || []) {
      if (v === null) continue;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    return { id: metric.metricId, min: Number.isFinite(min) ? min : 0, max: Number.isFinite(max) ? max : 1, metric: true };
  }

  /** The axes as of the last draw (the metrics' scales follow the data): the parameters, then
   * the metrics, the first of them last (it sets the colours). */
  allAxes() {
    if (!this.current) this.current = [...this.axes, ...[...this.metrics.slice(1), this.metric].map((m) => this.metricAxis(m))];
    return this.current;
  }

  x(k) {
    const n = this.axes.length + this.metrics.length;
    return PAD.left + (k * (this.canvas.width - PAD.left - PAD.right)) / Math.max(1, n - 1);
  }

  axisAt(px) {
    const n = this.axes.length + this.metrics.length;
    for (let k = 0; k < n; k++) if (Math.abs(px - this.x(k)) < 14) return k;
    return null;
  }

  valueAt(py) {
    const h = this.canvas.height - PAD.top - PAD.bottom;
    return Math.max(0, Math.min(1, 1 - (py - PAD.top) / h));
  }

  /** A row's place on each axis (null where it has no value). */
  places(row) {
    const t = this.trials;
    return this.allAxes().map((a) => place(a, (a.metric ? t.metrics.get(a.id) : t.parameters.get(a.id))?.[row] ?? null));
  }

  /** Whether a row lies inside every brush (a row with no value on a brushed axis does not). */
  keeps(row) {
    if (!this.brushes.size) return true;
    const p = this.places(row);
    for (const [k, [lo, hi]] of this.brushes) if (p[k] === null || p[k] < lo || p[k] > hi) return false;
    return true;
  }

  draw() {
    this.current = null;
    const axes = this.allAxes();
    const c = this.canvas;
    c.width = Math.max(320, this.root.clientWidth || 800);
    const g = c.getContext("2d");
    const h = c.height - PAD.top - PAD.bottom;
    const y = (u) => PAD.top + (1 - u) * h;
    const inactiveY = PAD.top + h + INACTIVE_DROP;
    const t = this.trials;
    const values = t.metrics.get(this.metric.metricId) || [];
    const axis = axes[axes.length - 1];
    const rows = Array.from(t.ids.keys()).filter((r) => t.states[r] === "SUCCEEDED" && values[r] !== null);
    // Best last, so it is drawn on top (and a stride keeps the order).
    const better = this.metric.goal === "MINIMIZE" ? (a, b) => values[b] - values[a] : (a, b) => values[a] - values[b];
    rows.sort(better);
    g.clearRect(0, 0, c.width, c.height);
    g.lineWidth = 1;
    // At most MAX_LINES lines: the best quarter of them always, the rest an even stride over
    // the others (the picture of 100,000 translucent lines is the picture of 12,000). Lines are
    // stroked in one path per colour band: a stroke per line is what costs.
    let shown = rows;
    if (rows.length > MAX_LINES) {
      const bestCount = MAX_LINES / 4;
      const others = rows.slice(0, rows.length - bestCount);
      const stride = others.length / (MAX_LINES - bestCount);
      shown = [];
      for (let k = 0; k < MAX_LINES - bestCount; k++) shown.push(others[Math.floor(k * stride)]);
      shown.push(...rows.slice(rows.length - bestCount));
    }
    this.sampled = shown.length < rows.length ? `${shown.length.toLocaleString("en")} of ${rows.length.toLocaleString("en")} trials drawn` : "";
    const alpha = shown.length > 5000 ? 0.08 : shown.length > 500 ? 0.25 : 0.7;
    const bands = Array.from({ length: BANDS + 1 }, () => new Path2D());
    for (const r of shown) {
      let band = BANDS; // outside the brushes
      if (this.keeps(r)) {
        const q = place(axis, values[r]);
        const goodness = this.metric.goal === "MINIMIZE" ? 1 - q : q;
        band = Math.min(BANDS - 1, Math.floor(goodness * BANDS));
      }
      const path = bands[band];
      let open = false;
      // A conditional parameter left inactive: through its axis' slot below. Any other axis
      // without a value (a metric not measured) breaks the line.
      this.places(r).forEach((u, k) => {
        const py = u !== null ? y(u) : axes[k].conditional ? inactiveY : null;
        if (py === null) open = false;
        else if (open) path.lineTo(this.x(k), py);
        else { path.moveTo(this.x(k), py); open = true; }
      });
    }
    g.strokeStyle = "rgba(180,186,196,0.15)";
    g.stroke(bands[BANDS]);
    for (let b = 0; b < BANDS; b++) {
      const goodness = (b + 0.5) / BANDS;
      g.strokeStyle = `hsla(${220 - 200 * goodness}, 70%, ${55 - 20 * goodness}%, ${alpha})`;
      g.stroke(bands[b]);
    }
    if (this.sampled) {
      g.fillStyle = "#6a7385";
      g.textAlign = "right";
      g.fillText(this.sampled, c.width - 4, c.height - 4);
    }
    g.fillStyle = "#1d2330";
    g.font = "12px system-ui, sans-serif";
    g.textAlign = "center";
    // A label centred on its axis, moved in just enough to stay on the canvas (the first axis's
    // "learning_rate" lost its first letter).
    const label = (text, x, y) => {
      const half = g.measureText(text).width / 2;
      g.fillText(text, Math.min(c.width - half - 2, Math.max(half + 2, x)), y);
    };
    axes.forEach((a, k) => {
      g.strokeStyle = "#6a7385";
      g.beginPath();
      g.moveTo(this.x(k), PAD.top);
      g.lineTo(this.x(k), PAD.top + h);
      g.stroke();
      g.font = "600 12px system-ui, sans-serif";
      label(a.id, this.x(k), PAD.top - 22);
      g.font = "11px system-ui, sans-serif";
      const lo = a.categories ? a.categories[0] : short(a.min), hi = a.categories ? a.categories[a.categories.length - 1] : short(a.max);
      g.fillStyle = "#6a7385";
      label(String(lo), this.x(k), PAD.top + h + 14);
      label(String(hi), this.x(k), PAD.top - 6);
      if (a.conditional) {
        g.beginPath();
        g.arc(this.x(k), inactiveY, 3, 0, 2 * Math.PI);
        g.fill();
        label("inactive", this.x(k), inactiveY + 14);
      }
      g.fillStyle = "#1d2330";
      const brush = this.brushes.get(k);
      if (brush) {
        g.fillStyle = "rgba(47,111,219,0.25)";
        g.fillRect(this.x(k) - 7, y(brush[1]), 14, y(brush[0]) - y(brush[1]));
        g.strokeStyle = "#2f6fdb";
        g.strokeRect(this.x(k) - 7, y(brush[1]), 14, y(brush[0]) - y(brush[1]));
        g.fillStyle = "#1d2330";
      }
    });
    this.root.dataset.drawn = "true";
  }
}

