// Two metrics against each other: every succeeded trial, the Pareto-optimal ones (from
// `listOptimalTrials`) highlighted and joined along the front. Drawn on a canvas.

import { el, num } from "./format.js";

export function paretoChart(box, trials, spec, optimalIds) {
  const [m1, m2] = spec.metrics;
  const a = trials.metrics.get(m1.metricId) || [], b = trials.metrics.get(m2.metricId) || [];
  const points = [];
  for (let r = 0; r < trials.ids.length; r++) {
    if (trials.states[r] === "SUCCEEDED" && a[r] !== null && b[r] !== null) points.push([a[r], b[r], optimalIds.has(trials.ids[r])]);
  }
  const canvas = el("canvas", { width: Math.max(320, box.clientWidth || 560), height: 320, id: "pareto-canvas" });
  box.replaceChildren(canvas, el("p", { class: "muted" },
    `${m1.metricId} (${m1.goal === "MINIMIZE" ? "lower" : "higher"} is better) across, ${m2.metricId} (${m2.goal === "MINIMIZE" ? "lower" : "higher"} is better) up; `,
    `${optimalIds.size} Pareto-optimal trials in green.`));
  const g = canvas.getContext("2d");
  const pad = { l: 56, r: 12, t: 10, b: 28 };
  const w = canvas.width - pad.l - pad.r, h = canvas.height - pad.t - pad.b;
  const [x0, x1] = extent(points.map((p) => p[0])), [y0, y1] = extent(points.map((p) => p[1]));
  const fx = (x) => pad.l + (w * (x - x0)) / (x1 - x0 || 1), fy = (y) => pad.t + h * (1 - (y - y0) / (y1 - y0 || 1));
  g.strokeStyle = "#dde1e8";
  g.strokeRect(pad.l, pad.t, w, h);
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
  g.fillStyle = "#6a7385";
  g.font = "11px system-ui, sans-serif";
  g.textAlign = "left";
  g.fillText(num(x0), pad.l, canvas.height - 8);
  g.textAlign = "right";
  g.fillText(num(x1), pad.l + w, canvas.height - 8);
  g.fillText(num(y1), pad.l - 4, pad.t + 10);
  g.fillText(num(y0), pad.l - 4, pad.t + h);
  box.dataset.drawn = "true";
}

function extent(values) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return Number.isFinite(lo) ? [lo, hi] : [0, 1];
}
