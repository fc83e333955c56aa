// One study: what it is, how far it got, its history and its best trial(s), kept live by
// polling the trials that changed since the last look.

import { Actions } from "./act.js";
import { algorithmName, call, locationPath } from "./api.js";
import { badge, el, num, stateName } from "./format.js";
import { historyChart, historyData, readHistory } from "./history.js";
import { TrialTable } from "./table.js";
import { curvesChart, readCurves } from "./curves.js";
import { renderImportance } from "./importance.js";
import { ParallelCoordinates } from "./parcoords.js";
import { paretoChart } from "./pareto.js";
import { objectivesOf, safeSide, safeValue, safetyOf } from "./safety.js";
import { Trials } from "./trials.js";

const POLL_MS = 2000;

export async function studyPage(main, where, number) {
  const studyPath = `${locationPath(where.project, where.location)}/studies/${number}`;
  const study = await call("GET", studyPath);
  const spec = study.studySpec;
  const objectives = objectivesOf(spec);
  const metric = objectives[0];
  const trials = new Trials(studyPath);

  const facts = el("div", { class: "facts" });
  const historyBox = el("div", { class: "chart", id: "history" });
  const logToggle = el("input", { type: "checkbox", id: "log-y" });
  const live = el("span", { class: "live on", id: "live" }, "live");
  const best = el("div", { id: "best" });
  const importance = el("div", { id: "importance" });
  const pareto = objectives.length > 1 ? el("div", { id: "pareto" }) : null;
  const table = new TrialTable(trials, spec);
  const parcoords = new ParallelCoordinates(trials, spec, () => table.refresh());
  table.keep = (row) => parcoords.keeps(row);
  const curvesBox = el("div", { class: "chart", id: "curves" });
  const curvesCard = el("section", { class: "card wide", id: "curves-card" },
    el("div", { class: "toolbar" }, el("h2", {}, "Learning curves"), el("span", {}, "running in blue, asked to stop in red (○ where the curve ends), completed in grey")),
    curvesBox);
  // After an action: read again at once rather than at the next poll.
  let readNow = async () => {};
  const actions = new Actions(studyPath, spec, trials, () => readNow(), () => { location.hash = "#/"; });
  let curves = null;
  const drawCurves = async () => {
    const answer = await readCurves(studyPath);
    curves?.destroy();
    curvesCard.hidden = !answer.curves.length;
    curves = curvesChart(curvesBox, answer);
  };
  main.replaceChildren(
    el("h1", {}, study.displayName, " ", badge(study.state), " ", el("a", { href: `#/studies/${number}/model`, class: "small", id: "model-link" }, "the model →")),
    facts,
    el("div", { class: "cards" },
      actions.root,
      el("section", { class: "card wide" },
        el("div", { class: "toolbar" }, el("h2", {}, "Optimisation history"), el("label", {}, logToggle, " log scale"), live),
        historyBox),
      pareto ? el("section", { class: "card wide" }, el("h2", {}, `${objectives[0].metricId} against ${objectives[1].metricId}`), pareto) : "",
      curvesCard,
      el("section", { class: "card" }, el("h2", {}, (objectives.length > 1 ? "Pareto-optimal trials" : "Best trial") + (safetyOf(spec).length ? " (safe only)" : "")), best),
      el("section", { class: "card" }, el("h2", {}, "Search space"), space(spec.parameters)),
      // The third of three half-width cards: across the page, not beside a gap.
      el("section", { class: "card wide" }, el("h2", {}, "Parameter importance"), importance),
      el("section", { class: "card wide" },
        el("div", { class: "toolbar" }, el("h2", {}, "Trials"), el("span", {}, "drag along an axis to keep a range; double-click it to drop the range")),
        parcoords.root, table.root),
    ),
  );

  // The history first, from the server's buckets (a bounded read at any size), then every trial.
  let chart = null;
  let history = null;
  const drawHistory = () => {
    logToggle.disabled = !history.positive;
    logToggle.title = history.positive ? "" : "a log scale needs every value above zero";
    const log = logToggle.checked && history.positive;
    if (history.data[0].length === 0) {
      // No trial has finished: a sentence, not an empty frame; the chart replaces it with the first.
      chart?.plot.destroy();
      chart = null;
      historyBox.replaceChildren(el("p", { class: "muted" }, "No trial has finished yet: the history is drawn from the first completed trial."));
      historyBox.dataset.drawn = "true";
      return;
    }
    if (historyBox.firstElementChild?.tagName === "P") historyBox.replaceChildren();
    if (chart && chart.log === log && chart.width === history.bucketWidth) chart.plot.setData(history.data);
    else {
      chart?.plot.destroy();
      chart = { plot: historyChart(historyBox, history, { log, metricId: metric.metricId }), log, width: history.bucketWidth };
    }
  };
  const refreshHistory = async () => {
    history = historyData(await readHistory(studyPath), metric.goal);
    drawHistory();
  };
  const draw = () => {
    renderFacts(facts, study, trials);
    actions.draw();
    parcoords.draw();
    table.refresh();
  };
  logToggle.addEventListener("change", drawHistory);
  let importancePending = false;
  const drawImportance = async () => { importancePending = await renderImportance(importance, studyPath); };
  const optimal = () => call("POST", `${studyPath}/trials:listOptimalTrials`, {});
  // Every read at once: the history (a bounded read at any size) draws first; the trials'
  // columns, the largest read, feed the table, the parallel coordinates and the Pareto chart.
  const first = optimal();
  const others = Promise.all([drawCurves(), drawImportance()]);
  await Promise.all([
    refreshHistory(),
    trials.refresh().then(async () => {
      draw();
      renderBest(best, spec, trials, pareto, await first);
    }),
    others,
  ]);

  let stopped = false;
  const read = async () => {
    const changed = await trials.refresh();
    if (changed) {
      draw();
      const [answer] = await Promise.all([optimal(), refreshHistory(), drawCurves(), drawImportance()]);
      renderBest(best, spec, trials, pareto, answer);
    } else if (importancePending) {
      await drawImportance();
    }
  };
  readNow = async () => {
    try {
      await read();
      // The study's own state (a stopped study is COMPLETED) is in its badge.
      const now = await call("GET", studyPath);
      main.querySelector("h1 .state")?.replaceWith(badge(now.state));
    } catch (e) {
      live.className = "live error";
      live.textContent = `not updating: ${e.message}`;
    }
  };
  const poll = async () => {
    if (stopped) return;
    if (!document.hidden) {
      try {
        await read();
        live.className = "live on";
        live.textContent = "live";
      } catch (e) {
        live.className = "live error";
        live.textContent = `not updating: ${e.message}`;
      }
    }
    timer = setTimeout(poll, POLL_MS);
  };
  let timer = setTimeout(poll, POLL_MS);
  const resize = () => {
    chart?.plot.setSize({ width: Math.max(320, historyBox.clientWidth), height: 320 });
    parcoords.draw();
  };
  window.addEventListener("resize", resize);
  return () => {
    stopped = true;
    clearTimeout(timer);
    window.removeEventListener("resize", resize);
    chart?.plot.destroy();
    curves?.destroy();
  };
}

function renderFacts(facts, study, trials) {
  const spec = study.studySpec;
  const counts = trials.counts();
  const fact = (label, ...value) => el("div", {}, el("span", {}, label), ...value);
  facts.replaceChildren(
    fact("algorithm", algorithmName(spec.algorithm)),
    fact("metrics", objectivesOf(spec).map((m) => `${m.metricId} ${m.goal === "MINIMIZE" ? "↓" : "↑"}`).join(", ")),
    ...safetyOf(spec).map((s) => fact(`safety: ${s.metricId} ${safeSide(s)}`, safetyFact(s, trials))),
    ...stoppingRule(spec).map((rule) => fact("early stopping", rule)),
    fact("parameters", String(countParameters(spec.parameters))),
    fact("trials", trials.ids.length.toLocaleString("en")),
    ...Object.entries(counts).map(([s, n]) => fact(stateName(s), n.toLocaleString("en"))),
  );
}

/** "14 of 18 safe (target 90 %)": the succeeded trials that reported safety metric `s`. */
function safetyFact(s, trials) {
  const values = trials.metrics.get(s.metricId) || [];
  let judged = 0, safe = 0;
  for (let r = 0; r < trials.ids.length; r++) {
    const v = values[r];
    if (trials.states[r] !== "SUCCEEDED" || v === null || v === undefined) continue;
    judged += 1;
    safe += safeValue(s, v) ? 1 : 0;
  }
  const target = s.target > 0 ? ` (target ${Math.round(100 * s.target)} %)` : "";
  return el("span", { class: "safety-fact", "data-metric": s.metricId }, `${safe} of ${judged} safe${target}`);
}

/** The study's automated stopping rule in words, if it has one. */
function stoppingRule(spec) {
  const by = (r) => (r.useElapsedDuration ? " (by elapsed time)" : "");
  if (spec.medianAutomatedStoppingSpec) return [`median rule${by(spec.medianAutomatedStoppingSpec)}`];
  if (spec.decayCurveStoppingSpec) return [`decay curve (GP)${by(spec.decayCurveStoppingSpec)}`];
  const convex = spec.convexAutomatedStoppingSpec;
  if (convex) return [`convex extrapolation${convex.maxStepCount ? ` to ${convex.maxStepCount}` : ""}${by(convex)}`];
  return [];
}

function countParameters(params) {
  return params.reduce((n, p) => n + 1 + countParameters((p.conditionalParameterSpecs || []).map((c) => c.parameterSpec)), 0);
}

/** The best trial or the Pareto front, from a `listOptimalTrials` answer. */
function renderBest(box, spec, trials, paretoBox, answer) {
  const optimal = answer.optimalTrials || [];
  if (paretoBox) paretoChart(paretoBox, trials, spec, new Set(optimal.map((t) => Number(t.id))));
  if (!optimal.length) {
    box.replaceChildren(el("p", { class: "muted" }, trials.ids.length ? "No trial has succeeded yet." : "No trials yet."));
    return;
  }
  const metricIds = spec.metrics.map((m) => m.metricId);
  // In the order the study declares them (a parent before its children), not the answer's.
  const declared = [];
  const walk = (ps) => ps.forEach((p) => { declared.push(p.parameterId); walk((p.conditionalParameterSpecs || []).map((c) => c.parameterSpec)); });
  walk(spec.parameters || []);
  const present = new Set(optimal.flatMap((t) => t.parameters.map((p) => p.parameterId)));
  const paramIds = [...declared.filter((id) => present.has(id)), ...[...present].filter((id) => !declared.includes(id))];
  const value = (t, id) => t.finalMeasurement?.metrics?.find((m) => m.metricId === id)?.value;
  const shown = (v) => (typeof v === "number" ? num(v) : v ?? "—");
  if (objectivesOf(spec).length === 1) {
    // One best trial: a row per metric and parameter, so a study of many parameters reads down
    // the card rather than off its edge.
    const t = optimal[0];
    box.replaceChildren(el("table", { class: "pairs" }, el("tbody", {},
      el("tr", {}, el("th", {}, "trial"), el("td", {}, t.id)),
      ...metricIds.map((m) => el("tr", {}, el("th", {}, m), el("td", {}, num(value(t, m))))),
      ...paramIds.map((p) => el("tr", {}, el("th", {}, p), el("td", {}, shown(t.parameters.find((q) => q.parameterId === p)?.value)))))));
    return;
  }
  box.replaceChildren(
    el("table", {},
      el("thead", {}, el("tr", {}, el("th", { class: "num" }, "trial"), ...metricIds.map((m) => el("th", { class: "num" }, m)), ...paramIds.map((p) => el("th", {}, p)))),
      el("tbody", {}, ...optimal.slice(0, 50).map((t) => el("tr", {},
        el("td", { class: "num" }, t.id),
        ...metricIds.map((m) => el("td", { class: "num" }, num(value(t, m)))),
        ...paramIds.map((p) => el("td", {}, shown(t.parameters.find((q) => q.parameterId === p)?.value))))))),
    optimal.length > 50 ? el("p", { class: "muted" }, `and ${optimal.length - 50} more on the front`) : "",
  );
}

function space(params, depth = 0) {
  const rows = [];
  const walk = (ps, d, under) => {
    for (const p of ps) {
      rows.push(el("tr", {}, el("td", {}, "\u00a0\u00a0".repeat(d) + p.parameterId), el("td", {}, describe(p)), el("td", { class: "muted" }, under || "")));
      for (const c of p.conditionalParameterSpecs || []) {
        const when = c.parentCategoricalValues?.values || c.parentDiscreteValues?.values || c.parentIntValues?.values || [];
        walk([c.parameterSpec], d + 1, `when ${p.parameterId} ∈ {${when.join(", ")}}`);
      }
    }
  };
  walk(params, depth, "");
  return el("table", {}, el("tbody", {}, ...rows));
}

function describe(p) {
  const scale = p.scaleType && p.scaleType !== "SCALE_TYPE_UNSPECIFIED" ? ` ${p.scaleType.replace("UNIT_", "").replace("_SCALE", "").toLowerCase()}` : "";
  if (p.doubleValueSpec) return `real [${num(p.doubleValueSpec.minValue ?? 0)}, ${num(p.doubleValueSpec.maxValue)}]${scale}`;
  if (p.integerValueSpec) return `integer [${p.integerValueSpec.minValue ?? 0}, ${p.integerValueSpec.maxValue}]${scale}`;
  if (p.discreteValueSpec) return `one of {${p.discreteValueSpec.values.map(num).join(", ")}}`;
  if (p.categoricalValueSpec) return `category {${p.categoricalValueSpec.values.join(", ")}}`;
  return "";
}
