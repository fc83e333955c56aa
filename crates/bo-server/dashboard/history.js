// The optimisation history, from the server's bucketed history (`trials:history`): every trial
// when the study is small, else the best and worst value of each bucket of consecutive trials;
// the best so far as a step line (of safe trials only, when the study has safety metrics);
// infeasible and unsafe trials marked in a band of their own along the worse edge (the top when
// minimising, the bottom when maximising; infeasible along the edge, unsafe inside it: never
// among the values, never on the best-so-far line; with safety metrics the values drawn are the
// safe trials'), trials asked to stop (by the early-stopping rule or their client) ringed; a log
// scale when every value is positive. Drawn with uPlot; the container says `data-drawn` once a
// frame is on screen.

import uPlot from "./vendor/uPlot.esm.js";
import { call } from "./api.js";
import { tickLabel } from "./axes.js";
import { INTEGER_TICKS } from "./format.js";

/** Buckets at most: a chart this wide shows no more. */
const POINTS = 4000;

/** The share of the plot's height kept free along the worse edge for the infeasible band. */
const BAND = 0.12;

export async function readHistory(studyPath) {
  return call("GET", `${studyPath}/trials:history?maxPoints=${POINTS}`);
}

export function historyData(h, goal) {
  const n = h.firstIds.length;
  const minimise = goal === "MINIMIZE";
  const xs = new Float64Array(n);
  const better = new Array(n).fill(null);
  const worse = new Array(n).fill(null);
  const best = new Array(n).fill(null);
  const infeasible = new Array(n).fill(null);
  const stopped = new Array(n).fill(null);
  const unsafe = new Array(n).fill(null);
  let incumbent = null;
  let low = Infinity;
  let high = -Infinity;
  for (let k = 0; k < n; k++) {
    xs[k] = h.bucketWidth === 1 ? h.firstIds[k] : (h.firstIds[k] + h.lastIds[k]) / 2;
    // With safety metrics, only safe trials' values are values: the unsafe are in the band.
    const [lo, hi] = h.safeMin ? [h.safeMin[k], h.safeMax[k]] : [h.min[k], h.max[k]];
    const [b, w] = minimise ? [lo, hi] : [hi, lo];
    if (b !== null) {
      better[k] = b;
      if (h.bucketWidth > 1) worse[k] = w;
      low = Math.min(low, lo);
      high = Math.max(high, hi ?? lo);
    }
    // The best so far: of the safe trials, where the study has safety metrics.
    const safe = h.safeMin ? (minimise ? h.safeMin[k] : h.safeMax[k]) : b;
    if (safe !== null && (incumbent === null || (minimise ? safe < incumbent : safe > incumbent))) incumbent = safe;
    best[k] = incumbent;
  }
  // The band's own scale runs 0..1 from the bottom: infeasible marks along the edge, unsafe
  // ones inside them.
  const edge = minimise ? 1 - BAND / 3 : BAND / 3;
  const inside = minimise ? 1 - (2 * BAND) / 3 : (2 * BAND) / 3;
  // A trial asked to stop without a value is ringed at the worst value, not the best.
  const worst = Number.isFinite(low) ? (minimise ? high : low) : 0;
  for (let k = 0; k < n; k++) {
    if (h.infeasible[k] > 0) infeasible[k] = edge;
    if (h.stopped[k] > 0) stopped[k] = better[k] ?? worst;
    if (h.unsafeTrials?.[k] > 0) unsafe[k] = inside;
  }
  const positive = (h.safeMin || h.min).every((v) => v === null || v > 0);
  const banded = infeasible.some((v) => v !== null) || unsafe.some((v) => v !== null);
  return { data: [xs, better, worse, best, infeasible, stopped, unsafe], positive, bucketWidth: h.bucketWidth, safety: Boolean(h.unsafeTrials), minimise, banded };
}

/** The value axis's range: the data's, with room left along the worse edge for the band. */
function valueRange(minimise, log) {
  return (u, min, max) => {
    if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
    if (log) {
      const span = Math.log10(max / min) || 1;
      const [below, above] = minimise ? [0.04, 0.04 + BAND * 1.2] : [0.04 + BAND * 1.2, 0.04];
      return [min / 10 ** (below * span), max * 10 ** (above * span)];
    }
    const span = max - min || Math.abs(max) || 1;
    const [below, above] = minimise ? [0.04, 0.04 + BAND * 1.2] : [0.04 + BAND * 1.2, 0.04];
    return [min - below * span, max + above * span];
  };
}

/** The band's strip in canvas pixels: [top, bottom]. */
function bandStrip(u, minimise) {
  const { top, height } = u.bbox;
  const h = height * BAND;
  return minimise ? [top, top + h] : [top + height - h, top + height];
}

export function historyChart(container, { data, bucketWidth, safety, minimise, banded }, { log, metricId }) {
  const width = Math.max(320, container.clientWidth || 800);
  const bucketed = bucketWidth > 1;
  // The band is shaded, and the value axis has no tick in it: nothing there reads as a value.
  const shade = (u) => {
    const [top, bottom] = bandStrip(u, minimise);
    u.ctx.save();
    u.ctx.fillStyle = "rgba(200,55,45,0.07)";
    u.ctx.fillRect(u.bbox.left, top, u.bbox.width, bottom - top);
    u.ctx.restore();
  };
  const outsideBand = (u, splits) => {
    const [top, bottom] = bandStrip(u, minimise);
    return splits.map((v) => {
      const at = u.valToPos(v, "y", true);
      return at >= top - 1 && at <= bottom + 1 ? null : v;
    });
  };
  const opts = {
    width,
    height: 320,
    // The band only when there is an infeasible trial to put in it.
    scales: { x: { time: false }, y: { distr: log ? 3 : 1, ...(banded ? { range: valueRange(minimise, log) } : {}) }, band: { auto: false, range: [0, 1] } },
    axes: [{ label: bucketed ? `trial (buckets of ${bucketWidth})` : "trial", incrs: INTEGER_TICKS }, { label: metricId, size: 70, values: (u, splits) => splits.map((v) => tickLabel(v, splits)), ...(banded ? { filter: outsideBand } : {}) }],
    series: [
      { label: "trial" },
      { label: bucketed ? `${metricId}, best in bucket` : metricId, stroke: "#2f6fdb", paths: () => null, points: { show: true, size: 5, fill: "#2f6fdb", stroke: "#2f6fdb" } },
      { label: "worst in bucket", show: bucketed, stroke: "#9db8ea", paths: () => null, points: { show: true, size: 4, fill: "#9db8ea", stroke: "#9db8ea" } },
      { label: "best so far", stroke: "#1f8a4c", width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
      { label: "infeasible", scale: "band", stroke: "#c8372d", paths: () => null, points: { show: true, size: 7, fill: "#c8372d", stroke: "#c8372d" },
        value: (u, v) => (v === null ? "" : "infeasible") },
      { label: "asked to stop", stroke: "#b7791f", paths: () => null, points: { show: true, size: 11, width: 2, fill: "rgba(0,0,0,0)", stroke: "#b7791f" } },
      { label: "unsafe", show: safety, scale: "band", stroke: "#b3261e", paths: () => null, points: { show: true, size: 9, width: 2, fill: "rgba(0,0,0,0)", stroke: "#b3261e" },
        value: (u, v) => (v === null ? "" : "unsafe") },
    ],
    hooks: { drawClear: banded ? [shade] : [], draw: [() => { container.dataset.drawn = "true"; }] },
  };
  container.replaceChildren();
  return new uPlot(opts, data, container);
}
