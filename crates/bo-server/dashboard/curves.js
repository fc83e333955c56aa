// Learning curves: each trial's intermediate measurements of the objective by step — running
// trials in blue, completed ones in grey, trials asked to stop (by the early-stopping rule or
// their client) in red with a mark where their curve ends.

import uPlot from "./vendor/uPlot.esm.js";
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
      points: { show: false },
    });
  }
  // The marks: where each stopped curve ends.
  const marks = new Array(data[0].length).fill(null);
  const xs = data[0];
  curves.forEach((c) => {
    if (c.stopTime === undefined) return;
    const k = xs.indexOf(c.steps[c.steps.length - 1]);
    if (k >= 0) marks[k] = c.values[c.values.length - 1];
  });
  data.push(marks);
  series.push({ label: "asked to stop", stroke: COLOURS.stopped, paths: () => null, points: { show: true, size: 9, fill: "#fff", stroke: COLOURS.stopped, width: 2 } });
  const opts = {
    width: Math.max(320, container.clientWidth || 800),
    height: 300,
    legend: { show: false },
    scales: { x: { time: false } },
    axes: [{ label: "step", incrs: INTEGER_TICKS }, { label: answer.metricId, size: 70 }],
    series,
    hooks: { draw: [() => { container.dataset.drawn = "true"; }] },
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
