// Two metrics against each other: every succeeded trial, the Pareto-optimal ones (from
// `listOptimalTrials`) highlighted and joined along the front, unsafe ones (a safety metric on
// the wrong side of its threshold) as red crosses; below it, the hypervolume of the safe trials'
// front after each trial (against a reference point from the data: each metric's worst value
// moved 10 % of its range outward, as bo's own `hypervolume::reference_point`). Drawn on
// canvases.

import { drawAxes, extent } from "./axes.js";
import { el, short } from "./format.js";
import { objectivesOf, safeRow, safetyOf } from "./safety.js";

export function paretoChart(box, trials, spec, optimalIds) {
  const [m1, m2] = objectivesOf(spec);
  const safety = safetyOf(spec);
  const a = trials.metrics.get(m1.metricId) || [], b = trials.metrics.get(m2.metricId) || [];
  const points = [], unsafe = [];
  for (let r = 0; r < trials.ids.length; r++) {
    if (trials.states[r] !== "SUCCEEDED" || a[r] === null || b[r] === null) continue;
    if (safeRow(trials, safety, r)) points.push([a[r], b[r], optimalIds.has(trials.ids[r])]);
    else unsafe.push([a[r], b[r]]);
  }
  const canvas = el("canvas", { width: Math.max(320, box.clientWidth || 560), height: 340, id: "pareto-canvas" });
  const growth = el("canvas", { width: canvas.width, height: 180, id: "hypervolume-canvas" });
  const history = hypervolumeHistory(points, [m1, m2]);
  box.replaceChildren(canvas, el("p", { class: "muted" },
    `${m1.metricId} (${m1.goal === "MINIMIZE" ? "lower" : "higher"} is better) across, ${m2.metricId} (${m2.goal === "MINIMIZE" ? "lower" : "higher"} is better) up; `,
    `${optimalIds.size} Pareto-optimal trials in green`, unsafe.length ? `, ${unsafe.length} unsafe trials as red crosses.` : "."),
    growth, el("p", { class: "muted", id: "hypervolume-caption" },
      history.length ? `Hypervolume of the front after each succeeded trial: ${short(history[history.length - 1][1])} now, against the reference point (${history.reference.map(short).join(", ")}).`
        : "Hypervolume: no succeeded trial yet."));
  drawGrowth(growth, history);
  const g = canvas.getContext("2d");
  const all = points.concat(unsafe);
  const [x0, x1] = widen(extent(all.map((p) => p[0]))), [y0, y1] = widen(extent(all.map((p) => p[1])));
  const frame = { l: 64, t: 10, w: canvas.width - 64 - 14, h: canvas.height - 10 - 44 };
  const { fx, fy } = drawAxes(g, frame, { lo: x0, hi: x1, title: m1.metricId }, { lo: y0, hi: y1, title: m2.metricId });
  g.fillStyle = "rgba(106,115,133,0.45)";
  for (const [x, y, front] of points) if (!front) g.fillRect(fx(x) - 2, fy(y) - 2, 4, 4);
  g.strokeStyle = "#b3261e";
  g.lineWidth = 1.2;
  for (const [x, y] of unsafe) {
    g.beginPath();
    g.moveTo(fx(x) - 3, fy(y) - 3); g.lineTo(fx(x) + 3, fy(y) + 3);
    g.moveTo(fx(x) - 3, fy(y) + 3); g.lineTo(fx(x) + 3, fy(y) - 3);
    g.stroke();
  }
  const front = points.filter((p) => p[2]).sort((p, q) => p[0] - q[0]);
  g.strokeStyle = "#1f8a4c";
  g.lineWidth = 1.5;
  g.beginPath();
  front.forEach(([x, y], k) => (k ? g.lineTo(fx(x), fy(y)) : g.moveTo(fx(x), fy(y))));
  g.stroke();
  g.fillStyle = "#1f8a4c";
  for (const [x, y] of front) {
    g.beginPath();
    g.arc(fx(x), fy(y), 4, 0, 2 * Math.PI);
    g.fill();
  }
  box.dataset.drawn = "true";
}

/** The hypervolume of the front of `points` ([m1, m2, …] in trial order) after each of up to
 * 300 evenly spaced prefixes, as [[trials, volume], …] with the reference point attached. */
export function hypervolumeHistory(points, metrics) {
  const oriented = points.map((p) => metrics.map((m, j) => (m.goal === "MINIMIZE" ? -p[j] : p[j])));
  const out = [];
  if (!oriented.length) return Object.assign(out, { reference: [] });
  const reference = [0, 1].map((j) => {
    const vs = oriented.map((p) => p[j]);
    const lo = Math.min(...vs), hi = Math.max(...vs);
    return lo - (hi > lo ? 0.1 * (hi - lo) : lo !== 0 ? 0.01 * Math.abs(lo) : 1);
  });
  const steps = Math.min(300, oriented.length);
  for (let s = 1; s <= steps; s++) {
    const n = Math.round((s * oriented.length) / steps);
    out.push([n, volume2d(oriented.slice(0, n), reference)]);
  }
  // Shown in the metrics' own direction.
  out.reference = reference.map((r, j) => (metrics[j].goal === "MINIMIZE" ? -r : r));
  return out;
}

/** The area dominated by oriented (larger is better) 2-D points above `r`: sort by the first
 * coordinate, best first, and sweep the staircase. */
function volume2d(points, r) {
  const kept = points.filter((p) => p[0] > r[0] && p[1] > r[1]).sort((p, q) => q[0] - p[0] || q[1] - p[1]);
  let area = 0, top = r[1];
  for (const [x, y] of kept) {
    if (y > top) {
      area += (x - r[0]) * (y - top);
      top = y;
    }
  }
  return area;
}

function drawGrowth(canvas, history) {
  if (!history.length) return;
  const g = canvas.getContext("2d");
  const frame = { l: 64, t: 10, w: canvas.width - 64 - 14, h: canvas.height - 10 - 40 };
  const top = history[history.length - 1][1] || 1;
  const { fx, fy } = drawAxes(g, frame, { lo: 0, hi: history[history.length - 1][0], title: "succeeded trials", integer: true }, { lo: 0, hi: top * 1.05, title: "hypervolume" });
  g.strokeStyle = "#1f8a4c";
  g.lineWidth = 1.5;
  g.beginPath();
  g.moveTo(fx(0), fy(0));
  let last = 0;
  for (const [n, v] of history) {
    g.lineTo(fx(n), fy(last));
    g.lineTo(fx(n), fy(v));
    last = v;
  }
  g.stroke();
}


/** A range with a margin, so the points at its ends are not drawn on the frame. */
function widen([lo, hi]) {
  const m = (hi - lo) * 0.04;
  return [lo - m, hi + m];
}
