// Axes for the charts drawn on a canvas (the Pareto front, the model's slices and map): round
// tick values, short labels, a light grid and the axes' titles. uPlot draws its own.

/** Round values between `lo` and `hi`, about `count` of them (powers of ten on a log axis;
 * whole numbers 1, 2 or 5 × 10^k apart on an axis of counts, `integer`). */
export function ticks(lo, hi, count, log = false, integer = false) {
  if (!(Number.isFinite(lo) && Number.isFinite(hi))) return [];
  if (hi <= lo) return [lo];
  if (log && lo > 0) {
    const out = [];
    for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) out.push(10 ** e);
    if (out.length >= 2) return thin(out, count);
  }
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const steps = integer ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
  const step = Math.max(integer ? 1 : 0, steps.map((m) => m * power).find((s) => s >= raw) ?? 10 * power);
  const out = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(Number((k * step).toPrecision(12)));
  return out;
}

/** Every other tick until at most `count` are left. */
function thin(values, count) {
  let out = values;
  while (out.length > count + 1) out = out.filter((_, k) => k % 2 === 0);
  return out;
}

/** A tick's label: no more digits than its neighbours need (on a log axis, than it needs); empty
 * for a tick a chart filtered out (uPlot passes it as null). */
export function tickLabel(v, all, log = false) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "";
  all = all.filter((x) => x !== null && x !== undefined && Number.isFinite(x));
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) {
    const [m, e] = v.toExponential(1).split("e");
    return `${Number(m)}e${Number(e)}`;
  }
  if (log) return String(Number(v.toPrecision(3)));
  const step = all.length > 1 ? Math.abs(all[1] - all[0]) : a || 1;
  const decimals = Math.min(6, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
  return v.toFixed(decimals);
}

/**
 * Draws a frame `box` ({l, t, w, h}) with ticks, grid and titles for `x` and `y`, each
 * {lo, hi, log, title, ticks?}; returns the functions that place a value in pixels.
 */
export function drawAxes(g, box, x, y) {
  const place = (a, v) => (a.log && a.lo > 0 ? (Math.log(v) - Math.log(a.lo)) / (Math.log(a.hi) - Math.log(a.lo) || 1) : (v - a.lo) / (a.hi - a.lo || 1));
  const fx = (v) => box.l + box.w * place(x, v);
  const fy = (v) => box.t + box.h * (1 - place(y, v));
  g.save();
  g.font = "11px system-ui, sans-serif";
  g.lineWidth = 1;
  const xs = x.ticks ?? ticks(x.lo, x.hi, Math.max(2, Math.floor(box.w / 70)), x.log, x.integer);
  const ys = y.ticks ?? ticks(y.lo, y.hi, Math.max(2, Math.floor(box.h / 40)), y.log, y.integer);
  g.strokeStyle = "#eef1f6";
  g.fillStyle = "#6a7385";
  g.textAlign = "center";
  g.textBaseline = "top";
  for (const v of xs) {
    const px = fx(v);
    if (px < box.l - 0.5 || px > box.l + box.w + 0.5) continue;
    g.beginPath();
    g.moveTo(px, box.t);
    g.lineTo(px, box.t + box.h);
    g.stroke();
    // The labels at the ends stay on the canvas.
    const text = tickLabel(v, xs, x.log), half = g.measureText(text).width / 2;
    g.fillText(text, Math.min(Math.max(px, half + 1), g.canvas.width - half - 1), box.t + box.h + 4);
  }
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (const v of ys) {
    const py = fy(v);
    if (py < box.t - 0.5 || py > box.t + box.h + 0.5) continue;
    g.beginPath();
    g.moveTo(box.l, py);
    g.lineTo(box.l + box.w, py);
    g.stroke();
    g.fillText(tickLabel(v, ys, y.log), box.l - 4, py);
  }
  g.strokeStyle = "#c9ced8";
  g.strokeRect(box.l, box.t, box.w, box.h);
  g.fillStyle = "#1d2330";
  g.font = "600 11px system-ui, sans-serif";
  if (x.title) {
    g.textAlign = "center";
    g.textBaseline = "bottom";
    g.fillText(x.title, box.l + box.w / 2, g.canvas.height - 2);
  }
  if (y.title) {
    g.translate(10, box.t + box.h / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.textBaseline = "middle";
    g.fillText(y.title, 0, 0);
  }
  g.restore();
  return { fx, fy };
}

/** The lowest and highest of `values` ([0, 1] when there are none); a flat range is widened. */
export function extent(values) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!Number.isFinite(lo)) return [0, 1];
  if (lo === hi) return [lo - (Math.abs(lo) || 1) * 0.05, hi + (Math.abs(hi) || 1) * 0.05];
  return [lo, hi];
}
