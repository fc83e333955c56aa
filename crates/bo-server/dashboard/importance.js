// Parameter importance as bars: PED-ANOVA over the trials (which parameters set the best trials
// apart) and, when the study's model predicts, the Sobol indices of its posterior mean (first
// order solid, total order as the lighter bar behind it). Computed by the server.

import { call } from "./api.js";
import { el, num } from "./format.js";

const pct = (v) => (v === undefined || v === null ? "—" : `${(100 * v).toFixed(1)}%`);

/** Draws the study's importance; whether the server is still computing it. */
export async function renderImportance(box, studyPath) {
  const imp = await call("GET", `${studyPath}/importance`);
  const rows = imp.parameters.filter((p) => p.pedAnova !== undefined || p.sobolTotal !== undefined);
  const note = [];
  if (imp.computing) note.push(el("p", { class: "muted" }, imp.computedDataVersion === undefined || imp.computedDataVersion === null ? "Computing in the background…" : "Updating in the background; these numbers are from earlier data."));
  if (!rows.length) {
    box.replaceChildren(...note, el("p", { class: "muted" }, `Importance needs at least 4 completed trials (${imp.trials} so far).`));
    box.dataset.drawn = "true";
    return imp.computing;
  }
  rows.sort((a, b) => (b.pedAnova ?? 0) + (b.sobolTotal ?? 0) - (a.pedAnova ?? 0) - (a.sobolTotal ?? 0));
  const bar = (value, cls, title) => {
    const b = el("div", { class: `bar ${cls}`, title });
    b.style.width = `${Math.max(0, Math.min(1, value ?? 0)) * 100}%`;
    return b;
  };
  const sobol = imp.sobolAbsent === undefined;
  box.replaceChildren(
    ...note,
    el("table", { class: "importance" },
      el("thead", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "PED-ANOVA"), sobol ? el("th", {}, "Sobol (first / total)") : null)),
      el("tbody", {}, ...rows.map((p) => el("tr", {},
        el("td", {}, p.parameterId),
        el("td", { class: "bars" }, el("div", { class: "track" }, bar(p.pedAnova, "ped", `PED-ANOVA ${num(p.pedAnova)} over ${p.activeTrials} trials where active`)), el("span", { class: "num" }, pct(p.pedAnova))),
        sobol ? el("td", { class: "bars" }, el("div", { class: "track" }, bar(p.sobolTotal, "total", `total ${num(p.sobolTotal)}`), bar(p.sobolFirst, "first", `first ${num(p.sobolFirst)}`)), el("span", { class: "num" }, `${pct(p.sobolFirst)} / ${pct(p.sobolTotal)}`)) : null)))),
    imp.terms ? el("table", { class: "importance", id: "terms" },
      el("thead", {}, el("tr", {}, el("th", {}, "additive term"), el("th", {}, "share of the model's variation"))),
      el("tbody", {}, ...[...imp.terms].sort((a, b) => b.share - a.share).map((t) => el("tr", {},
        el("td", {}, t.name),
        el("td", { class: "bars" }, el("div", { class: "track" }, bar(t.share, "first", `${pct(t.share)}`)), el("span", { class: "num" }, pct(t.share))))))) : "",
    el("p", { class: "muted" }, `${imp.metricId}, ${imp.trials} completed trials. PED-ANOVA: how differently the best 10% spread over each parameter (shares sum to 1). `,
      sobol ? `Sobol: the share of the model's mean variance each explains alone / with its interactions (${imp.sobolBasePoints} base points).` : `No Sobol indices: ${imp.sobolAbsent}.`),
  );
  box.dataset.drawn = "true";
  return imp.computing;
}
