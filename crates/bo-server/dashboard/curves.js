// Learning curves: each trial's intermediate measurements of the objective by step — running
// trials in blue, completed ones in grey, trials asked to stop (by the early-stopping rule or
// their client) in red with a ring where their curve ends — one per trial, however many stopped
// at the same step (the container's `data-stopped-marks` says how many were drawn).

import uPlot from "./vendor/uPlot.esm.js";
import { tickLabel } from "./axes.js";
import { INTEGER_TICKS } from "./format.js";
import { call } from "./api.js";

const COLOURS = { ACTIVE: "#2f6fdb", STOPPING: "#c8372d", stopped: "#c8372d", done: "rgba(106,115,133,0.45)" };

export async function readCurves(studyPath) {
  return call("GET", `${studyPath}/trials:curves?limit=100`);
}

export function curvesChart(container, answer) {
  const curves = answer.curves.filter((c) => c.steps.length);
  container.replaceChildren();
  if (!curves.length) {
    container.dataset.drawn = "true";
    container.append(Object.assign(document.createElement("p"), { className: "muted", textContent: "No trial has reported intermediate measurements." }));
    return null;
  }
  const tables = curves.map((c) => [c.steps, c.values]);
  const data = uPlot.join(tables);
  const series = [{ label: "step" }];
  for (const c of curves) {
    const stopped = c.stopTime !== undefined;
    const colour = stopped ? COLOURS.stopped : COLOURS[c.state] || COLOURS.done;
    series.push({
      label: `trial ${c.trialId}${stopped ? " (stopped)" : ""}`,
      stroke: colour,
      width: c.state === "ACTIVE" ? 2 : 1,
      dash: stopped ? [5, 3] : undefined,
      spanGaps: true,
      // A curve of one measurement has no line to draw: its point is shown instead.
      points: { show: c.steps.length === 1, size: 6, fill: colour, stroke: colour },
    });
  }
  // The rings: where each stopped curve ends, drawn per trial (a series holds one value a step,
  // so trials stopped at the same step once shared one mark).
  const ends = curves.filter((c) => c.stopTime !== undefined).map((c) => [c.steps[c.steps.length - 1], c.values[c.values.length - 1]]);
  const ring = (u) => {
    const g = u.ctx;
    const r = 4.5 * devicePixelRatio;
    g.save();
    g.strokeStyle = COLOURS.stopped;
    g.fillStyle = "#fff";
    g.lineWidth = 2 * devicePixelRatio;
    let drawn = 0;
    for (const [x, y] of ends) {
      const px = u.valToPos(x, "x", true), py = u.valToPos(y, "y", true);
      if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
      g.beginPath();
      g.arc(px, py, r, 0, 2 * Math.PI);
      g.fill();
      g.stroke();
      drawn++;
    }
    g.restore();
    container.dataset.stoppedMarks = String(drawn);
  };
  const opts = {
    width: Math.max(320, container.clientWidth || 800),
    height: 300,
    legend: { show: false },
    scales: { x: { time: false } },
    axes: [{ label: "step", incrs: INTEGER_TICKS }, { label: answer.metricId, size: 70, values: (u, splits) => splits.map((v) => tickLabel(v, splits)) }],
    series,
    hooks: { draw: [ring, () => { container.dataset.drawn = "true"; }] },
  };
  const chart = new uPlot(opts, data, container);
  // A read is bounded by its points: say how many older curves it left out.
  if (answer.omitted) {
    container.append(Object.assign(document.createElement("p"), {
      className: "muted",
      textContent: `${answer.omitted} older curve${answer.omitted === 1 ? "" : "s"} not shown (the read holds at most 100,000 points).`,
    }));
  }
  return chart;
}
