// A study's trials as columns, kept up to date: the first read takes every trial
// (`trials:columns`, page after page), later reads only what changed after the cursor.

import { call } from "./api.js";

export class Trials {
  constructor(studyPath) {
    this.path = `${studyPath}/trials:columns`;
    this.cursor = "";
    this.clear();
  }

  clear() {
    this.index = new Map();
    this.ids = [];
    this.states = [];
    this.startTimes = [];
    this.endTimes = [];
    this.stopTimes = [];
    this.labels = [];
    this.metrics = new Map();
    this.parameters = new Map();
  }

  /** Reads what changed since the last read (everything the first time); whether anything did. */
  async refresh() {
    let changed = false;
    for (;;) {
      const page = await call("GET", `${this.path}?pageSize=100000${this.cursor ? `&after=${this.cursor}` : ""}`);
      if (page.reset) this.clear();
      this.studyState = page.studyState;
      changed = this.apply(page) || changed || page.reset;
      this.cursor = page.cursor;
      if (!page.more) return changed;
    }
  }

  apply(page) {
    const n = page.ids.length;
    for (const m of page.metrics) if (!this.metrics.has(m.metricId)) this.metrics.set(m.metricId, new Array(this.ids.length).fill(null));
    for (const p of page.parameters) if (!this.parameters.has(p.parameterId)) this.parameters.set(p.parameterId, new Array(this.ids.length).fill(null));
    for (let i = 0; i < n; i++) {
      const id = page.ids[i];
      let row = this.index.get(id);
      if (row === undefined) {
        row = this.ids.length;
        this.index.set(id, row);
        this.ids.push(id);
        for (const column of this.metrics.values()) column.push(null);
        for (const column of this.parameters.values()) column.push(null);
      }
      this.states[row] = page.states[i];
      this.startTimes[row] = page.startTimes[i];
      this.endTimes[row] = page.endTimes[i];
      this.stopTimes[row] = page.stopTimes[i];
      this.labels[row] = page.labels?.[i] ?? null;
      for (const m of page.metrics) this.metrics.get(m.metricId)[row] = m.values[i];
      for (const p of page.parameters) this.parameters.get(p.parameterId)[row] = p.values[i];
    }
    return n > 0;
  }

  /** Rows in trial-id order. */
  byId() {
    const rows = Array.from(this.ids.keys());
    rows.sort((a, b) => this.ids[a] - this.ids[b]);
    return rows;
  }

  /** A trial's state as shown: Vertex's, and a SUCCEEDED trial that was asked to stop first
   * (a pruned trial: a partial result) as STOPPED_EARLY. */
  shownState(row) {
    return this.states[row] === "SUCCEEDED" && this.stopTimes[row] ? "STOPPED_EARLY" : this.states[row];
  }

  /** Trials by state as shown (stopped-early trials apart from the SUCCEEDED ones). */
  counts() {
    const c = {};
    for (let r = 0; r < this.states.length; r++) {
      const s = this.shownState(r);
      c[s] = (c[s] || 0) + 1;
    }
    return c;
  }

  /** Whether any trial has labels. */
  hasLabels() {
    return this.labels.some((l) => l && Object.keys(l).length);
  }
}
