// The studies of a location: state, algorithm, trials by state, best value, last activity; a
// search over names. The overview (`studies:overview`, a summary of each study) is read a page
// of 100 at a time, the table drawn after the first page and grown as the others arrive.

import { algorithmName, call, locationPath } from "./api.js";
import { ago, badge, el, num } from "./format.js";

const PAGE = 100;

export async function studiesPage(main, where) {
  const studies = [];
  let token = "";
  let stopped = false;
  const read = async () => {
    const page = await call("GET", `${locationPath(where.project, where.location)}/studies:overview?pageSize=${PAGE}${token ? `&pageToken=${token}` : ""}`);
    studies.push(...(page.studies || []));
    token = page.nextPageToken || "";
  };
  await read();

  const search = el("input", { type: "search", placeholder: "search studies", "aria-label": "search studies" });
  const body = el("tbody");
  const count = el("span", { id: "studies-count" });
  const render = () => {
    const q = search.value.trim().toLowerCase();
    const rows = studies.filter((s) => !q || s.study.displayName.toLowerCase().includes(q) || s.study.algorithm?.toLowerCase().includes(q));
    body.replaceChildren(...rows.map(row));
    // What the table shows: a search's matches out of the location's studies (so far, while
    // pages are still arriving).
    const place = `${where.project} / ${where.location}`;
    const more = token ? " (reading more…)" : "";
    const noun = studies.length === 1 ? "study" : "studies";
    count.textContent = q
      ? `${rows.length} of ${studies.length} ${noun} in ${place} match${rows.length === 1 ? "es" : ""}${more}`
      : `${studies.length} ${noun} in ${place}${more}`;
  };
  search.addEventListener("input", render);
  render();
  // The other pages, one after another, each drawn as it arrives.
  (async () => {
    while (token && !stopped) {
      await read();
      if (!stopped) render();
    }
  })().catch((e) => { count.textContent = `could not read every study: ${e.message}`; });

  main.replaceChildren(
    el("h1", {}, "Studies"),
    el("div", { class: "toolbar" }, search, count),
    studies.length
      ? el("table", { id: "studies" },
          el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "name"), el("th", {}, "state"), el("th", {}, "algorithm"),
            el("th", {}, "objective"), el("th", { class: "num" }, "trials"), el("th", {}, "by state"), el("th", { class: "num" }, "best"), el("th", {}, "last activity"))),
          body)
      : el("p", { class: "muted" }, "No studies here yet. Create one through the API, or choose another project and location above."),
  );
  return () => { stopped = true; };
}

/** A study's trials by state as shown: the SUCCEEDED ones stopped early (pruned) apart. */
function shownCounts(s) {
  const counts = { ...s.trialCounts };
  const early = s.stoppedEarlyCount || 0;
  if (early > 0) {
    counts.SUCCEEDED -= early;
    counts.STOPPED_EARLY = early;
  }
  const order = ["REQUESTED", "ACTIVE", "STOPPING", "SUCCEEDED", "STOPPED_EARLY", "INFEASIBLE"];
  return order.filter((state) => counts[state] > 0).map((state) => [state, counts[state]]);
}

function row(s) {
  const number = s.study.name.split("/").pop();
  const counts = s.trialCounts;
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const metric = s.study.metrics.find((m) => !m.safetyConfig) || s.study.metrics[0];
  const more = s.study.metrics.length > 1 ? ` (+${s.study.metrics.length - 1})` : "";
  return el("tr", {},
    el("td", { class: "num" }, number),
    el("td", {}, el("a", { href: `#/studies/${number}` }, s.study.displayName)),
    el("td", {}, badge(s.study.state)),
    el("td", {}, algorithmName(s.study.algorithm)),
    el("td", {}, `${metric.metricId} ${metric.goal === "MINIMIZE" ? "↓" : "↑"}${more}`),
    el("td", { class: "num" }, total.toLocaleString("en")),
    el("td", { class: "counts" }, ...shownCounts(s).map(([state, n]) => el("span", {}, badge(state), " ", n.toLocaleString("en")))),
    el("td", { class: "num" }, num(s.bestValue)),
    el("td", {}, ago(s.lastActivityTime)),
  );
}
