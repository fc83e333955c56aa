// The trials of a study as a table that stays fast at 100,000 rows: only the rows in view are
// in the page (a fixed row height, a spacer for the rest). Sort by a column, filter by state
// and by text, download the rows shown as CSV.

import { el, num, stateName } from "./format.js";
import { safeSide, safeValue, safetyOf } from "./safety.js";

const ROW = 28;
const SHOWN = 16;

export class TrialTable {
  constructor(trials, spec) {
    this.trials = trials;
    this.metricIds = spec.metrics.map((m) => m.metricId);
    this.safety = new Map(safetyOf(spec).map((s) => [s.metricId, s]));
    this.sort = { key: "id", up: true };
    this.state = "";
    this.query = "";
    /** A further filter of rows (the parallel coordinates' brushes). */
    this.keep = () => true;
    this.stateSelect = el("select", { "aria-label": "state", onchange: () => { this.state = this.stateSelect.value; this.refresh(); } },
      el("option", { value: "" }, "every state"),
      ...["REQUESTED", "ACTIVE", "STOPPING", "SUCCEEDED", "STOPPED_EARLY", "INFEASIBLE"].map((s) => el("option", { value: s }, stateName(s))));
    this.search = el("input", { type: "search", placeholder: "filter: text in any column", oninput: () => { this.query = this.search.value.trim().toLowerCase(); this.refresh(); } });
    this.count = el("span", { id: "trial-count" });
    this.download = el("button", { class: "plain", onclick: () => this.csv() }, "download CSV");
    this.head = el("thead");
    this.body = el("tbody");
    this.spacerTop = el("tr", { class: "spacer" }, el("td", {}));
    this.spacerBottom = el("tr", { class: "spacer" }, el("td", {}));
    this.scroller = el("div", { class: "scroller", style: undefined, onscroll: () => this.paint() }, el("table", { id: "trials" }, this.head, this.body));
    this.root = el("div", {}, el("div", { class: "toolbar" }, this.stateSelect, this.search, this.count, this.download), this.scroller);
  }

  columns() {
    const t = this.trials;
    // A client's labels (Optuna's trial number among them) get a column once any trial has one.
    const labels = t.hasLabels()
      ? [{ key: "labels", label: "labels", get: (r) => Object.entries(t.labels[r] || {}).map(([k, v]) => `${k}=${v}`).join(" ") || null }]
      : [];
    return [
      { key: "id", label: "trial", num: true, get: (r) => t.ids[r] },
      ...labels,
      { key: "state", label: "state", get: (r) => stateName(t.shownState(r)) },
      ...this.metricIds.map((m) => ({ key: `m:${m}`, label: m, num: true, get: (r) => t.metrics.get(m)?.[r] ?? null, safety: this.safety.get(m) })),
      ...[...t.parameters.keys()].map((p) => ({ key: `p:${p}`, label: p, num: false, get: (r) => t.parameters.get(p)[r] })),
    ];
  }

  /** Recomputes the rows shown (after new data, a sort or a filter) and paints them. */
  refresh() {
    const cols = this.columns();
    this.cols = cols;
    const t = this.trials;
    let rows = Array.from(t.ids.keys());
    if (this.state) rows = rows.filter((r) => t.shownState(r) === this.state);
    rows = rows.filter((r) => this.keep(r));
    if (this.query) rows = rows.filter((r) => cols.some((c) => String(c.get(r) ?? "").toLowerCase().includes(this.query)));
    const col = cols.find((c) => c.key === this.sort.key) || cols[0];
    const sign = this.sort.up ? 1 : -1;
    rows.sort((a, b) => {
      const x = col.get(a), y = col.get(b);
      if (x === y) return t.ids[a] - t.ids[b];
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    this.rows = rows;
    this.scroller.style.height = `${ROW * (Math.min(Math.max(rows.length, 1), SHOWN) + 1) + 8}px`;
    this.count.textContent = `${rows.length.toLocaleString("en")} of ${t.ids.length.toLocaleString("en")} trials`;
    this.head.replaceChildren(el("tr", {}, ...cols.map((c) => el("th", {
      class: c.num ? "num sortable" : "sortable",
      onclick: () => { this.sort = { key: c.key, up: this.sort.key === c.key ? !this.sort.up : true }; this.refresh(); },
    }, c.label, this.sort.key === c.key ? (this.sort.up ? " ▲" : " ▼") : ""))));
    this.paint();
  }

  paint() {
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW) - 4);
    const last = Math.min(this.rows.length, first + SHOWN + 8);
    this.spacerTop.firstChild.style.height = `${first * ROW}px`;
    this.spacerBottom.firstChild.style.height = `${(this.rows.length - last) * ROW}px`;
    const cell = (c, r) => {
      const v = c.get(r);
      // A safety metric's value on the wrong side of its threshold is marked.
      if (c.safety && !safeValue(c.safety, v)) {
        return el("td", { class: "num unsafe", title: `unsafe: ${c.label} should be ${safeSide(c.safety)}` }, num(v));
      }
      return el("td", { class: c.num ? "num" : undefined }, typeof v === "number" ? num(v) : v ?? "—");
    };
    const shown = this.rows.slice(first, last).map((r) => {
      const tr = el("tr", {}, ...this.cols.map((c) => cell(c, r)));
      tr.style.height = `${ROW}px`;
      return tr;
    });
    this.body.replaceChildren(this.spacerTop, ...shown, this.spacerBottom);
  }

  csv() {
    // A text cell that a spreadsheet would read as a formula (=, +, -, @, or a leading tab or
    // carriage return) gets a leading apostrophe, so opening the file runs nothing (OWASP's
    // advice on CSV injection); numbers are written as they are.
    const quote = (v) => {
      let s = v === null || v === undefined ? "" : String(v);
      if (typeof v !== "number" && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
      return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
    };
    const lines = [this.cols.map((c) => quote(c.label)).join(",")];
    for (const r of this.rows) lines.push(this.cols.map((c) => quote(c.get(r))).join(","));
    const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
    const a = el("a", { href: url, download: "trials.csv" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}
