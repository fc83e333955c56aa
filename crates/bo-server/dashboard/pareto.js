// Two metrics against each other: every succeeded trial, the Pareto-optimal ones (from
// `listOptimalTrials`) highlighted and joined along the front. Drawn on a canvas.

import { drawAxes, extent } from "./axes.js";
import { el } from "./format.js";

export function paretoChart(box, trials, spec, optimalIds) {
  const [m1, m2] = spec.metrics;
  const a = trials.metrics.get(m1.metricId) || [], b = trials.metrics.get(m2.metricId) || [];
  const points = [];
  for (let r = 0; r < trials.ids.length; r++) {
    if (trials.states[r] === "SUCCEEDED" && a[r] !== null && b[r] !== null) points.push([a[r], b[r], optimalIds.has(trials.ids[r])]);
  }
  const canvas = el("canvas", { width: Math.max(320, box.clientWidth || 560), height: 340, id: "pareto-canvas" });
  box.replaceChildren(canvas, el("p", { class: "muted" },
    `${m1.metricId} (${m1.goal === "MINIMIZE" ? "lower" : "higher"} is better) across, ${m2.metricId} (${m2.goal === "MINIMIZE" ? "lower" : "higher"} is better) up; `,
    `${optimalIds.size} Pareto-optimal trials in green.`));
  const g = canvas.getContext("2d");
  const [x0, x1] = widen(extent(points.map((p) => p[0]))), [y0, y1] = widen(extent(points.map((p) => p[1])));
  const frame = { l: 64, t: 10, w: canvas.width - 64 - 14, h: canvas.height - 10 - 44 };
  const { fx, fy } = drawAxes(g, frame, { lo: x0, hi: x1, title: m1.metricId }, { lo: y0, hi: y1, title: m2.metricId });
  g.fillStyle = "rgba(106,115,133,0.45)";
  for (const [x, y, front] of points) if (!front) g.fillRect(fx(x) - 2, fy(y) - 2, 4, 4);
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

/** A range with a margin, so the points at its ends are not drawn on the frame. */
function widen([lo, hi]) {
  const m = (hi - lo) * 0.04;
  return [lo - m, hi + m];
}
