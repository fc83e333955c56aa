// The dashboard's entry: the header (project and location, kept in this browser), and a router
// over the address's hash: `#/` the studies, `#/studies/N` one study, `#/studies/N/model` its model.

import { studiesPage } from "./studies.js";
import { studyPage } from "./study.js";
import { modelPage } from "./model.js";
import { call, locationPath } from "./api.js";
import { el } from "./format.js";

const where = {
  project: localStorage.getItem("bo.project") || "demo",
  location: localStorage.getItem("bo.location") || "local",
};

const form = document.getElementById("location");
form.project.value = where.project;
form.location.value = where.location;
/** Shows `project` / `location` from now on (remembered in this browser). */
function choose(project, location) {
  where.project = project || "demo";
  where.location = location || "local";
  form.project.value = where.project;
  form.location.value = where.location;
  localStorage.setItem("bo.project", where.project);
  localStorage.setItem("bo.location", where.location);
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  choose(form.project.value.trim(), form.location.value.trim());
  location.hash = "#/";
  route();
});

let leave = () => {};

async function route() {
  leave();
  leave = () => {};
  const main = document.getElementById("main");
  const crumbs = document.getElementById("crumbs");
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const home = el("a", { href: "#/" }, `${where.project} / ${where.location}`);
  try {
    if (parts[0] === "studies" && /^\d+$/.test(parts[1] || "") && parts[2] === "model") {
      crumbs.replaceChildren(home, " › ", el("a", { href: `#/studies/${parts[1]}` }, `study ${parts[1]}`), " › model");
      leave = await modelPage(main, where, parts[1], `${locationPath(where.project, where.location)}/studies/${parts[1]}`);
    } else if (parts[0] === "studies" && /^\d+$/.test(parts[1] || "")) {
      crumbs.replaceChildren(home, ` › study ${parts[1]}`);
      leave = await studyPage(main, where, parts[1]);
    } else {
      crumbs.replaceChildren(home);
      leave = await studiesPage(main, where);
    }
  } catch (e) {
    main.replaceChildren(el("p", { class: "error" }, `${e.message}`));
  }
}

/** Offers the projects and locations that hold studies (those the key grants); takes the
 * first when the remembered one holds none. */
async function offerLocations() {
  const { locations = [] } = await call("GET", "/v1/locations");
  if (!locations.length) return;
  const select = document.getElementById("where");
  const key = (project, location) => JSON.stringify([project, location]);
  select.replaceChildren(...locations.map((l) => el("option", { value: key(l.project, l.location) }, `${l.project} / ${l.location} (${l.studies} ${l.studies === 1 ? "study" : "studies"})`)));
  if (!locations.some((l) => l.project === where.project && l.location === where.location)) choose(locations[0].project, locations[0].location);
  select.value = key(where.project, where.location);
  select.hidden = false;
  select.addEventListener("change", () => {
    choose(...JSON.parse(select.value));
    location.hash = "#/";
    route();
  });
}

window.addEventListener("hashchange", route);
// The locations first (asking for a key if the server needs one), then the page.
offerLocations().catch(() => {}).finally(route);
