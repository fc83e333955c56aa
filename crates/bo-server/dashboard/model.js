// What a study's model learned: its hyperparameters and structure as the designer describes
// them, one-parameter slices of the posterior through the best trial (the median and its central 90 % interval, the trials
// drawn on top), and a two-parameter map of the median or the width of the 90 % interval. A
// REMBO model, whose GPs live in its random embeddings, is sliced and mapped along one
// embedding's own coordinates y instead, through that embedding's best point. Every number
// comes from the server's model (`GET …/model`, `:predict`).

import { ApiError, call } from "./api.js";
import { drawAxes, extent, tickLabel, ticks } from "./axes.js";
import { el, num, short } from "./format.js";
import { axesOf } from "./parcoords.js";
import { Trials } from "./trials.js";

const SLICE_POINTS = 40;
const MAP_SIDE = 30;
const MAX_PREDICT = 1000;

export async function modelPage(main, where, number, studyPath) {
  const [study, summary, optimal] = await Promise.all([
    call("GET", studyPath),
    call("GET", `${studyPath}/model`),
    call("POST", `${studyPath}/trials:listOptimalTrials`, {}),
  ]);
  const spec = study.studySpec;
  const trials = new Trials(studyPath);
  await trials.refresh();
  const metric = spec.metrics.find((m) => !m.safetyConfig) || spec.metrics[0];
  const best = (optimal.optimalTrials || [])[0];
  const slices = el("div", { id: "slices", class: "slices" });
  const map = el("div", { id: "map" });
  const embedded = embeddedView(summary.model || {}, studyPath);
  main.replaceChildren(
    el("h1", {}, study.displayName, el("span", { class: "muted" }, " — model")),
    el("p", {}, el("a", { href: `#/studies/${number}` }, "← the study")),
    el("div", { class: "cards" },
      el("section", { class: "card" }, el("h2", {}, "What the model learned"), describe(summary, trials, metric)),
      el("section", { class: "card" }, el("h2", {}, embedded ? `Map of two coordinates of embedding ${embedded.index + 1}` : "Map of two parameters"), map),
      el("section", { class: "card wide" }, el("h2", {}, embedded
        ? `Slices through embedding ${embedded.index + 1}'s best point, along its coordinates y`
        : `Slices through the best trial${best ? ` (trial ${best.id})` : ""}`), slices)),
  );
  if (embedded) {
    const around = "the other coordinates at the embedding's best point";
    await drawSlices(slices, embedded.predict, embedded.base, embedded.axes, trials, metric);
    await drawMap(map, embedded.predict, embedded.base, embedded.axes, trials, metric, around);
    return () => {};
  }
  if (!best) {
    slices.replaceChildren(el("p", { class: "muted" }, "No trial has succeeded yet: there is no best trial to slice through."));
    map.replaceChildren(el("p", { class: "muted" }, "No trial has succeeded yet."));
    slices.dataset.drawn = map.dataset.drawn = "true";
    return () => {};
  }
  const base = Object.fromEntries(best.parameters.map((p) => [p.parameterId, p.value]));
  // Reals and integers take any value of their range; a discrete parameter's list, a category
  // and a parent of conditional parameters (moving it changes which others are active) are not
  // sliced.
  const numeric = axesOf(spec.parameters).filter((a) => (a.kind === "double" || a.kind === "integer") && !a.parent && a.id in base);
  const predictAt = (points) => predict(studyPath, points);
  try {
    await drawSlices(slices, predictAt, base, numeric, trials, metric);
    await drawMap(map, predictAt, base, numeric, trials, metric, "the other parameters at the best trial's values");
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 400) throw e;
    for (const box of [slices, map]) {
      box.replaceChildren(el("p", { class: "muted" }, e.message));
      box.dataset.drawn = "true";
    }
  }
  return () => {};
}

function describe(summary, trials, metric) {
  const model = summary.model || {};
  const rows = [
    ["algorithm", summary.algorithm],
    ["fitted on", `${summary.fittedOnTrials > 0 && summary.fittedOnTrials < summary.trials
      ? `${summary.fittedOnTrials} of ${summary.trials} trials, chosen by relevance`
      : `${summary.trials} trials`} (data version ${summary.fittedDataVersion} of ${summary.dataVersion})`],
    ["precomputed suggestions", summary.precomputedSuggestions],
  ];
  const hyper = model.hyperparameters || {};
  const table = el("table", { id: "hyperparameters" }, el("tbody", {},
    ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(v)))),
    ...Object.entries(hyper).map(([k, v]) => el("tr", {}, el("th", {}, label(k)), el("td", { class: "num" }, typeof v === "number" ? short(v) : JSON.stringify(v)))),
  ));
  if (model.acquisition) table.tBodies[0].append(el("tr", {}, el("th", {}, "acquisition"), el("td", {}, model.acquisition)));
  const shown = ["hyperparameters", "tree", "embeddings", "groups", "cliques", "objectives", "safety", "constraints", "acquisition"];
  const rest = Object.fromEntries(Object.entries(model).filter(([k]) => !shown.includes(k)));
  return el("div", {}, table, model.objectives ? metricModels(model) : "", model.tree ? tree(model.tree, trials, metric) : "",
    model.groups || model.cliques ? groups(model.groups || model.cliques, model.groups ? "group" : "clique") : "",
    Array.isArray(model.embeddings) ? embeddings(model) : "",
    el("p", { class: "muted" }, "Length scales are how far a parameter must move (in the unit interval, or log space for log-scaled ones) to change the objective much: a short one means the model is sensitive to it. They are not importances — see the study's importance."),
    Object.keys(rest).length ? el("details", {}, el("summary", {}, "everything the designer reports"), el("pre", {}, JSON.stringify(rest, null, 2))) : "");
}

/** A model of several metrics: each metric's own model (its role, and the hyperparameters its
 * designer reports), and each safety constraint's state — its safe trials and whether it is
 * hard (the observed safe fraction below its target) and so how probably safe a suggestion
 * must be. */
function metricModels(model) {
  const rows = [
    ...Object.entries(model.objectives || {}).map(([id, m]) => [id, "objective", m]),
    ...Object.entries(model.safety || {}).map(([id, m]) => [id, "safety", m]),
  ];
  const hyper = (m) => Object.entries(m.hyperparameters || {}).map(([k, x]) => el("div", {}, `${label(k)} ${typeof x === "number" ? short(x) : JSON.stringify(x)}`));
  const models = el("table", { id: "metric-models" },
    el("thead", {}, el("tr", {}, el("th", {}, "metric"), el("th", {}, "role"), el("th", {}, "its model"))),
    el("tbody", {}, ...rows.map(([id, role, m]) => el("tr", {}, el("td", {}, id), el("td", {}, role), el("td", { class: "muted hyper" }, ...hyper(m))))));
  const constraints = (model.constraints || []).length ? el("table", { id: "constraints" },
    el("thead", {}, el("tr", {}, el("th", {}, "constraint"), el("th", { class: "num" }, "safe trials"), el("th", {}, "now"))),
    el("tbody", {}, ...model.constraints.map((c) => el("tr", {}, el("td", {}, c.metricId),
      el("td", { class: "num" }, `${c.safeTrials} of ${c.judgedTrials}`),
      el("td", {}, c.hard ? `hard: a suggestion must be safe with probability ${num(c.requiredProbability)}` : "soft: the gain is weighted by the probability of being safe"))))) : "";
  return el("div", {}, models, constraints);
}

/** An Add-Tree model's vertices: the parameters each holds, the trials on its branch (where
 * its parameters are active), their best value, and the vertex's hyperparameters. */
function tree(vertices, trials, metric) {
  const values = trials.metrics.get(metric.metricId) || [];
  const better = (a, b) => (metric.goal === "MINIMIZE" ? a < b : a > b);
  return el("table", { id: "tree" },
    el("thead", {}, el("tr", {}, el("th", {}, "vertex"), el("th", {}, "parameters"), el("th", { class: "num" }, "trials"), el("th", { class: "num" }, "best"), el("th", {}, "hyperparameters"))),
    el("tbody", {}, ...vertices.map((v) => {
      const column = v.parameters.length ? trials.parameters.get(v.parameters[0]) : null;
      let n = 0, best = null;
      for (let r = 0; r < trials.ids.length; r++) {
        if (column && column[r] === null) continue;
        n++;
        if (trials.states[r] === "SUCCEEDED" && values[r] !== null && (best === null || better(values[r], best))) best = values[r];
      }
      return el("tr", {}, el("td", {}, v.vertex), el("td", {}, v.parameters.join(", ") || "—"), el("td", { class: "num" }, n.toLocaleString("en")), el("td", { class: "num" }, num(best)),
        el("td", { class: "muted hyper" }, ...Object.entries(v.hyperparameters || {}).map(([k, x]) => el("div", {}, `${label(k)} ${short(x)}`))));
    })));
}

/** An additive model's groups (seed 004) or a dependency graph's cliques (seed 002). */
function groups(list, noun) {
  return el("table", { id: "groups" },
    el("thead", {}, el("tr", {}, el("th", {}, noun), el("th", {}, "parameters"))),
    el("tbody", {}, ...list.map((g, k) => el("tr", {}, el("td", { class: "num" }, k + 1), el("td", {}, g.join(", "))))),
  );
}

/** REMBO's random embeddings (seed 001): each one's own numbers, as the designer reports them. */
function embeddings(model) {
  const list = model.embeddings;
  // The best point in y is where the slices go through, not a column of its own.
  const keys = [...new Set(list.flatMap((e) => Object.keys(e)))].filter((k) => k !== "bestY");
  // Seeds are identifiers, not quantities: shown as given. A small object (a trust region's
  // side and restarts) reads as "side 0.8, restarts 0", not as JSON cut off at the panel's edge.
  const words = (o) => Object.entries(o).map(([k, x]) => `${k} ${typeof x === "number" ? short(x) : x}`).join(", ");
  const cell = (v, k) => (k === "seed" ? String(v) : typeof v === "number" ? num(v) : v === undefined || v === null ? "—"
    : typeof v === "object" && !Array.isArray(v) && Object.values(v).every((x) => typeof x !== "object") ? words(v)
    : typeof v === "object" ? JSON.stringify(v) : String(v));
  return el("div", { id: "embeddings" },
    el("p", {}, `${list.length} random embedding${list.length === 1 ? "" : "s"} of dimension ${model.d}; the search box is [${short(model.searchBox?.[0])}, ${short(model.searchBox?.[1])}]^${model.d}, each point projected into the space.`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "#"), ...keys.map((k) => el("th", {}, k)))),
      el("tbody", {}, ...list.map((e, i) => el("tr", {}, el("td", { class: "num" }, i + 1), ...keys.map((k) => el("td", {}, cell(e[k], k))))))));
}

/** A hyperparameter's name for people: `matern52.log_length_scale.lr` → `matern52 log length scale lr`. */
function label(name) {
  return name.replace(/lengthscale/gi, "length scale").replace(/[._]/g, " ").replace(/\blog(?=\S)/g, "log ");
}

/** The value of a numeric axis at `u` of its range (log-scaled where the axis is). */
function at(axis, u, integer) {
  let v = axis.log && axis.min > 0 ? Math.exp(Math.log(axis.min) + u * (Math.log(axis.max) - Math.log(axis.min))) : axis.min + u * (axis.max - axis.min);
  if (integer) v = Math.round(v);
  return Math.min(axis.max, Math.max(axis.min, v));
}

/** For a REMBO model of the low-dimensional kernel: the embedding with the most trials that has a
 * best point, its coordinates y₁…y_d as axes over the search box, that point as the base, and
 * predictions along them (`:predict`'s `embedded`); null for any other model. */
function embeddedView(model, studyPath) {
  if (model.model !== "REMBO" || model.kernel !== "LOW_DIM" || !Array.isArray(model.embeddings)) return null;
  let index = -1;
  model.embeddings.forEach((e, i) => {
    if (Array.isArray(e.bestY) && (index < 0 || e.trials > model.embeddings[index].trials)) index = i;
  });
  if (index < 0) return null;
  const [lo, hi] = model.searchBox;
  const ids = model.embeddings[index].bestY.map((_, j) => `y${j + 1}`);
  const axes = ids.map((id) => ({ id, kind: "double", min: lo, max: hi, log: false }));
  const base = Object.fromEntries(ids.map((id, j) => [id, model.embeddings[index].bestY[j]]));
  const predictAt = async (points) => {
    const out = [];
    for (let k = 0; k < points.length; k += MAX_PREDICT) {
      const chunk = points.slice(k, k + MAX_PREDICT).map((p) => ids.map((id) => p[id]));
      const answer = await call("POST", `${studyPath}:predict`, { embedded: { embedding: index, points: chunk } });
      out.push(...answer.predictions);
    }
    return out;
  };
  return { index, axes, base, predict: predictAt };
}

async function predict(studyPath, points) {
  const out = [];
  for (let k = 0; k < points.length; k += MAX_PREDICT) {
    const chunk = points.slice(k, k + MAX_PREDICT).map((p) => ({ parameters: Object.entries(p).map(([parameterId, value]) => ({ parameterId, value })) }));
    const answer = await call("POST", `${studyPath}:predict`, { trials: chunk });
    out.push(...answer.predictions);
  }
  return out;
}

async function drawSlices(box, predictAt, base, numeric, trials, metric) {
  if (!numeric.length) {
    box.replaceChildren(el("p", { class: "muted" }, "The best trial has no numeric parameter to slice along."));
    box.dataset.drawn = "true";
    return;
  }
  const points = [];
  const grids = numeric.map((a) => {
    const integer = a.kind === "integer";
    const xs = [...new Set(Array.from({ length: SLICE_POINTS }, (_, k) => at(a, k / (SLICE_POINTS - 1), integer)))];
    for (const x of xs) points.push({ ...base, [a.id]: x });
    return xs;
  });
  const predictions = await predictAt(points);
  let k = 0;
  const values = trials.metrics.get(metric.metricId) || [];
  box.replaceChildren(...numeric.map((a, i) => {
    const xs = grids[i];
    const p = predictions.slice(k, k + xs.length);
    k += xs.length;
    const dots = [];
    const column = trials.parameters.get(a.id) || [];
    for (let r = 0; r < trials.ids.length && dots.length < 5000; r++) {
      if (trials.states[r] === "SUCCEEDED" && column[r] !== null && values[r] !== null) dots.push([column[r], values[r]]);
    }
    const canvas = el("canvas", { width: 380, height: 240, class: "slice" });
    plot(canvas, a, xs, p, dots, base[a.id], metric.metricId);
    return el("figure", {}, canvas, el("figcaption", {}, a.id));
  }));
  box.dataset.drawn = "true";
}

function plot(canvas, axis, xs, p, dots, at0, metricId) {
  const g = canvas.getContext("2d");
  // The model's median and its central 90 % interval (`:predict`'s quantiles: under an output
  // warp the interval is not symmetric about the median).
  const [lo, hi] = extent([...p.map((q) => q.lower), ...p.map((q) => q.upper), ...dots.map((d) => d[1])]);
  const frame = { l: 58, t: 8, w: canvas.width - 58 - 12, h: canvas.height - 8 - 26 };
  const { fx, fy } = drawAxes(g, frame, { lo: axis.min, hi: axis.max, log: axis.log }, { lo, hi, title: metricId });
  g.save();
  g.beginPath();
  g.rect(frame.l, frame.t, frame.w, frame.h);
  g.clip();
  g.fillStyle = "rgba(47,111,219,0.15)";
  g.beginPath();
  xs.forEach((x, k) => g.lineTo(fx(x), fy(p[k].upper)));
  [...xs].reverse().forEach((x, k) => { const q = p[xs.length - 1 - k]; g.lineTo(fx(x), fy(q.lower)); });
  g.fill();
  g.fillStyle = "rgba(106,115,133,0.5)";
  for (const [x, y] of dots) g.fillRect(fx(x) - 1.5, fy(y) - 1.5, 3, 3);
  g.strokeStyle = "#2f6fdb";
  g.lineWidth = 2;
  g.beginPath();
  xs.forEach((x, k) => g.lineTo(fx(x), fy(p[k].median)));
  g.stroke();
  g.strokeStyle = "#1f8a4c";
  g.lineWidth = 1;
  g.setLineDash([4, 3]);
  g.beginPath();
  g.moveTo(fx(at0), frame.t);
  g.lineTo(fx(at0), frame.t + frame.h);
  g.stroke();
  g.restore();
}

async function drawMap(box, predictAt, base, numeric, trials, metric, around) {
  if (numeric.length < 2) {
    box.replaceChildren(el("p", { class: "muted" }, "A map needs two numeric parameters active in the best trial."));
    box.dataset.drawn = "true";
    return;
  }
  const pick = (k) => el("select", {}, ...numeric.map((a, i) => el("option", { value: i, selected: i === k }, a.id)));
  const xSel = pick(0), ySel = pick(1);
  const what = el("select", {}, el("option", { value: "median" }, "median"), el("option", { value: "width" }, "90 % interval width"));
  const canvas = el("canvas", { width: 520, height: 400, id: "map-canvas" });
  const legend = el("p", { class: "muted" });
  const frame = { l: 64, t: 8, w: 380, h: 350 };
  const draw = async () => {
    const ax = numeric[Number(xSel.value)], ay = numeric[Number(ySel.value)];
    if (ax === ay) return;
    const ints = [ax.kind === "integer", ay.kind === "integer"];
    const points = [];
    for (let j = 0; j < MAP_SIDE; j++) for (let i = 0; i < MAP_SIDE; i++) {
      points.push({ ...base, [ax.id]: at(ax, (i + 0.5) / MAP_SIDE, ints[0]), [ay.id]: at(ay, (j + 0.5) / MAP_SIDE, ints[1]) });
    }
    const p = await predictAt(points);
    const v = p.map((q) => (what.value === "median" ? q.median : q.upper - q.lower));
    const [lo, hi] = extent(v);
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, canvas.width, canvas.height);
    // Warmer is better for the median (whatever the goal), wider for the interval.
    const flip = what.value === "median" && metric.goal === "MINIMIZE";
    const colour = (u) => `hsl(${220 - 200 * u}, 65%, ${80 - 40 * u}%)`;
    const cw = frame.w / MAP_SIDE, ch = frame.h / MAP_SIDE;
    v.forEach((x, k) => {
      const i = k % MAP_SIDE, j = Math.floor(k / MAP_SIDE);
      const u = (x - lo) / (hi - lo || 1);
      g.fillStyle = colour(flip ? 1 - u : u);
      g.fillRect(frame.l + i * cw, frame.t + frame.h - (j + 1) * ch, cw + 1, ch + 1);
    });
    const { fx, fy } = drawAxes(g, frame, { lo: ax.min, hi: ax.max, log: ax.log, title: ax.id }, { lo: ay.min, hi: ay.max, log: ay.log, title: ay.id });
    const cx = trials.parameters.get(ax.id) || [], cy = trials.parameters.get(ay.id) || [];
    g.fillStyle = "rgba(29,35,48,0.7)";
    for (let r = 0, n = 0; r < trials.ids.length && n < 5000; r++) {
      if (trials.states[r] !== "SUCCEEDED" || cx[r] === null || cy[r] === null) continue;
      g.fillRect(fx(cx[r]) - 1.5, fy(cy[r]) - 1.5, 3, 3);
      n++;
    }
    // The colour bar: the values the colours stand for.
    const bar = { l: frame.l + frame.w + 16, t: frame.t, w: 14, h: frame.h };
    for (let k = 0; k < 60; k++) {
      const u = k / 59;
      g.fillStyle = colour(flip ? 1 - u : u);
      g.fillRect(bar.l, bar.t + bar.h * (1 - (k + 1) / 60), bar.w, bar.h / 60 + 1);
    }
    g.strokeStyle = "#c9ced8";
    g.strokeRect(bar.l, bar.t, bar.w, bar.h);
    g.fillStyle = "#6a7385";
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "left";
    g.textBaseline = "middle";
    const marks = ticks(lo, hi, 6);
    for (const m of marks) g.fillText(tickLabel(m, marks), bar.l + bar.w + 4, bar.t + bar.h * (1 - (m - lo) / (hi - lo || 1)));
    legend.textContent = `${what.value === "median" ? `the model's median of ${metric.metricId}` : "the width of the model's central 90 % interval"} from ${short(lo)} to ${short(hi)} (${what.value === "median" ? "better" : "wider"} is warmer); ${around}${cx.length ? "; dots are trials" : ""}.`;
    box.dataset.drawn = "true";
  };
  for (const s of [xSel, ySel, what]) s.addEventListener("change", draw);
  box.replaceChildren(el("div", { class: "toolbar" }, "across ", xSel, " up ", ySel, what), canvas, legend);
  await draw();
}
