// Acting on a study by hand (a person in the loop): ask for a suggestion, add a trial of one's
// own, report a measurement, complete a trial, mark it infeasible, stop it, delete it; stop,
// export (bo's JSON for import elsewhere, CSV, Optuna's journal) or delete the study. Every action is one call of the same /v1 API, with the same key, as every
// client makes: the server validates, and its message is shown as it is. Deleting asks first.
// Must not: keep state of its own about trials (the page's poll shows what the server holds).

import { call, download } from "./api.js";
import { el, num } from "./format.js";

const OPEN = new Set(["REQUESTED", "ACTIVE", "STOPPING"]);
const SHOWN = 20;

/** The "act on the study" card: `changed()` after every action (the page reads the trials
 * again), `gone()` once the study is deleted. */
export class Actions {
  constructor(studyPath, spec, trials, changed, gone) {
    this.studyPath = studyPath;
    this.spec = spec;
    this.trials = trials;
    this.changed = changed;
    this.gone = gone;
    this.status = el("p", { id: "act-status", class: "muted", role: "status" });
    this.form = el("div", { id: "act-form" });
    this.open = el("div", { id: "open-trials" });
    // What a person has open under a row (a form, a confirmation), by trial: a redraw while
    // they type (another worker's trial finished) puts the same node back, values and all.
    this.under = new Map();
    this.drawn = null;
    this.table = el("div");
    // Any trial by its number: built once, so a redraw never empties what is being typed.
    const other = el("form", { id: "trial-by-id", class: "inline" },
      el("label", {}, "any trial by number ", el("input", { name: "id", type: "number", min: 1, step: 1, required: true, size: 6 })), " ",
      el("button", { type: "submit", class: "plain" }, "delete…"));
    const otherBox = el("div");
    other.addEventListener("submit", (event) => {
      event.preventDefault();
      const id = Number(other.id.value);
      this.confirm(otherBox, `Delete trial ${id}? This cannot be undone.`, `Delete trial ${id}`, () => this.deleteTrial(id));
    });
    this.heading = el("h3", {});
    this.open.replaceChildren(this.heading, this.table, other, otherBox);
    const button = (id, label, run, plain = true) => el("button", { id, type: "button", class: plain ? "plain" : "", onclick: run }, label);
    this.root = el("section", { class: "card wide", id: "act" },
      el("div", { class: "toolbar" }, el("h2", {}, "Act on the study"),
        button("suggest", "Suggest a trial", () => this.suggest(), false),
        button("add-trial", "Add a trial…", () => this.showAddForm()),
        button("stop-study", "Stop the study", () => this.stopStudy()),
        button("delete-study", "Delete the study…", () => this.confirmDeleteStudy()),
        el("span", { class: "muted" }, "export:"),
        button("export-json", "JSON", () => this.export("json")),
        button("export-csv", "CSV", () => this.export("csv")),
        button("export-journal", "Optuna journal", () => this.export("optuna-journal"))),
      this.status, this.form, this.open);
  }

  /** Runs one action: its message on success, the server's on failure; then the page reads
   * again (`read`: not after the study is gone). */
  async run(what, action, read = true) {
    this.say(`${what}…`);
    try {
      const message = await action();
      this.say(message);
      if (read) await this.changed();
      return true;
    } catch (e) {
      this.say(`${what}: ${e.message}`, true);
      return false;
    }
  }

  say(message, error = false) {
    this.status.className = error ? "error" : "muted";
    this.status.textContent = message;
  }

  trialPath(id) {
    return `${this.studyPath}/trials/${id}`;
  }

  /** One new suggestion, waiting out a pending operation. Each click is a client of its own: a
   * client that asks again is handed back its open trials (Vertex's rule), and a person who
   * asks twice wants two. */
  suggest() {
    return this.run("Suggesting", async () => {
      const clientId = `dashboard ${new Date().toISOString()}`;
      let op = await call("POST", `${this.studyPath}/trials:suggest`, { suggestionCount: 1, clientId });
      const deadline = Date.now() + 60000;
      while (!op.done) {
        if (Date.now() > deadline) throw new Error("the suggestion is still being computed; it will appear among the open trials");
        await new Promise((resolve) => setTimeout(resolve, 500));
        op = await call("GET", `/v1/${op.name}`);
      }
      if (op.error) throw new Error(op.error.message);
      const trials = op.response?.trials || [];
      if (!trials.length) return "The study has nothing more to suggest.";
      return `Suggested trial ${trials.map((t) => t.id).join(", ")}: enter its result below.`;
    });
  }

  stopStudy() {
    return this.run("Stopping the study", async () => {
      await call("POST", `${this.studyPath}:stop`, {});
      return "The study is stopped: it suggests nothing more; open trials can still report.";
    });
  }

  /** Saves the study as a file: `json` is bo's export document, which `studies:import` (the
   * Python client's `import_study`) reads on this server or another. */
  export(format) {
    return this.run("Exporting", async () => {
      const { name, bytes } = await download(`${this.studyPath}:export?format=${format}`, `study.${format}`);
      const size = bytes < 1024 ? `${bytes} bytes` : bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
      return `Saved ${name} (${size}).`;
    }, false);
  }

  confirmDeleteStudy() {
    this.confirm(this.form, "Delete this study and every trial in it? This cannot be undone.", "Delete the study", async () => {
      const done = await this.run("Deleting the study", async () => {
        await call("DELETE", this.studyPath);
        return "Deleted.";
      }, false);
      if (done) this.gone();
    });
  }

  /** A confirmation in `box`: the action runs only on its own button; either button closes it
   * (`closed`, when given, instead of emptying the box). */
  confirm(box, question, label, action, closed = () => box.replaceChildren()) {
    box.replaceChildren(el("div", { class: "confirm", role: "alertdialog" },
      el("span", {}, question), " ",
      el("button", { type: "button", class: "danger", onclick: () => { closed(); action(); } }, label), " ",
      el("button", { type: "button", class: "plain", onclick: () => closed() }, "Cancel")));
  }

  /** A trial of the person's own: a field per parameter (a conditional one shown while its
   * parent has a value it depends on), and optionally its result. */
  showAddForm() {
    const fields = parameterFields(this.spec.parameters || []);
    const metrics = metricFields(this.spec.metrics, "final");
    const form = el("form", { id: "add-trial-form", class: "act-form" },
      el("h3", {}, "Add a trial"),
      el("div", { class: "fields" }, ...fields.map((f) => f.root)),
      el("p", { class: "muted" }, "Its result, if it was evaluated already (else it waits, REQUESTED, for the next suggestion to hand it out):"),
      el("div", { class: "fields" }, ...metrics.map((m) => m.root)),
      el("button", { type: "submit" }, "Add the trial"), " ",
      el("button", { type: "button", class: "plain", onclick: () => this.form.replaceChildren() }, "Cancel"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const parameters = fields.flatMap((f) => f.read());
      const values = metrics.map((m) => m.read()).filter((m) => m !== null);
      const body = { parameters };
      if (values.length) body.finalMeasurement = { metrics: values };
      const ok = await this.run("Adding the trial", async () => {
        const trial = await call("POST", `${this.studyPath}/trials`, body);
        return `Added trial ${trial.id} (${trial.state}).`;
      });
      // Only this form: another may have been opened while the page read again.
      if (ok) form.remove();
    });
    this.form.replaceChildren(form);
  }

  /** The open trials (REQUESTED, ACTIVE, STOPPING), newest first, with what can be done to each;
   * and a way to any other trial by its number. Redrawn only when those rows changed; a form or
   * confirmation open under a row that is still open survives the redraw. */
  draw() {
    const rows = [];
    for (let r = this.trials.ids.length - 1; r >= 0 && rows.length < SHOWN; r--) {
      if (OPEN.has(this.trials.states[r])) rows.push(r);
    }
    const params = [...this.trials.parameters.keys()];
    const assignment = (r) => params.map((p) => [p, this.trials.parameters.get(p)[r]]).filter(([, v]) => v !== null && v !== undefined)
      .map(([p, v]) => `${p} = ${typeof v === "number" ? num(v) : v}`).join(", ");
    const seen = rows.map((r) => [this.trials.ids[r], this.trials.states[r], assignment(r)]);
    const key = JSON.stringify(seen);
    if (key === this.drawn) return;
    this.drawn = key;
    const ids = new Set(seen.map(([id]) => id));
    for (const id of [...this.under.keys()]) if (!ids.has(id)) this.under.delete(id);
    this.heading.textContent = `Open trials${rows.length === SHOWN ? ` (the newest ${SHOWN})` : ""}`;
    const open = rows.length
      ? el("table", { id: "open-table" },
        el("thead", {}, el("tr", {}, el("th", { class: "num" }, "trial"), el("th", {}, "state"), el("th", {}, "parameters"), el("th", {}, ""))),
        el("tbody", {}, ...seen.map(([id, state, parameters]) => {
          const under = el("td", { colspan: 4 });
          const line = el("tr", { class: "act-under", hidden: true }, under);
          const show = (node) => {
            under.replaceChildren(...(node ? [node] : []));
            line.hidden = !node;
            if (node) this.under.set(id, node);
            else this.under.delete(id);
          };
          if (this.under.has(id)) show(this.under.get(id));
          // Opens what `make` builds under the row; its `close` closes it only while it is still
          // what is open there (a form that finishes after another was opened leaves that one).
          const openUnder = (make) => {
            let node = null;
            node = make(() => { if (this.under.get(id) === node) show(null); });
            show(node);
            return node;
          };
          const b = (label, run, plain = true) => el("button", { type: "button", class: plain ? "plain" : "", "data-action": label, onclick: run }, label);
          return [
            el("tr", { "data-trial": id },
              el("td", { class: "num" }, id), el("td", {}, state), el("td", { class: "params" }, parameters),
              el("td", { class: "actions" },
                b("complete", () => openUnder((close) => this.completeForm(id, close)), false),
                b("measure", () => openUnder((close) => this.measureForm(id, close))),
                b("infeasible", () => openUnder((close) => this.infeasibleForm(id, close))),
                b("stop", () => this.run(`Stopping trial ${id}`, async () => {
                  await call("POST", `${this.trialPath(id)}:stop`, {});
                  return `Trial ${id} is stopped.`;
                })),
                b("delete", () => openUnder((close) => {
                  const box = el("div");
                  this.confirm(box, `Delete trial ${id}? This cannot be undone.`, `Delete trial ${id}`, () => this.deleteTrial(id), close);
                  return box;
                })))),
            line,
          ];
        }).flat()))
      : el("p", { class: "muted" }, "No open trials: suggest one, or add one of your own.");
    this.table.replaceChildren(open);
  }

  deleteTrial(id) {
    return this.run(`Deleting trial ${id}`, async () => {
      await call("DELETE", this.trialPath(id));
      return `Trial ${id} is deleted.`;
    });
  }

  completeForm(id, close) {
    const metrics = metricFields(this.spec.metrics, `complete-${id}`);
    return this.actionForm(`complete-${id}`, metrics.map((m) => m.root), `Complete trial ${id}`, close, async () => {
      const values = metrics.map((m) => m.read()).filter((m) => m !== null);
      const body = values.length ? { finalMeasurement: { metrics: values } } : {};
      const trial = await call("POST", `${this.trialPath(id)}:complete`, body);
      return `Trial ${id} is ${trial.state}.`;
    }, "Leave every value empty to complete it with its last measurement.");
  }

  measureForm(id, close) {
    const step = el("label", {}, "step ", el("input", { name: "step", type: "number", min: 0, step: 1, size: 6 }));
    const metrics = metricFields(this.spec.metrics, `measure-${id}`);
    return this.actionForm(`measure-${id}`, [step, ...metrics.map((m) => m.root)], `Add the measurement to trial ${id}`, close, async (form) => {
      const measurement = { metrics: metrics.map((m) => m.read()).filter((m) => m !== null) };
      if (form.step.value !== "") measurement.stepCount = String(form.step.value);
      await call("POST", `${this.trialPath(id)}:addTrialMeasurement`, { measurement });
      return `Trial ${id} has the measurement.`;
    });
  }

  infeasibleForm(id, close) {
    const reason = el("label", {}, "why ", el("input", { name: "reason", size: 30, maxlength: 1000, placeholder: "e.g. out of memory" }));
    return this.actionForm(`infeasible-${id}`, [reason], `Mark trial ${id} infeasible`, close, async (form) => {
      await call("POST", `${this.trialPath(id)}:complete`, { trialInfeasible: true, infeasibleReason: form.reason.value });
      return `Trial ${id} is INFEASIBLE.`;
    });
  }

  actionForm(id, fields, label, close, action, hint) {
    const form = el("form", { id, class: "act-form inline" }, hint ? el("p", { class: "muted" }, hint) : "",
      el("div", { class: "fields" }, ...fields), el("button", { type: "submit" }, label), " ",
      el("button", { type: "button", class: "plain", onclick: close }, "Cancel"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (await this.run(label, () => action(form))) close();
    });
    return form;
  }
}

/** A field per metric: `read()` gives `{metricId, value}`, or null when left empty. */
function metricFields(metrics, prefix) {
  return metrics.map((m) => {
    const input = el("input", { name: `${prefix}-${m.metricId}`, "data-metric": m.metricId, type: "number", step: "any", size: 10 });
    return {
      root: el("label", {}, `${m.metricId}${m.safetyConfig ? " (safety)" : ""} `, input),
      read: () => (input.value === "" ? null : { metricId: m.metricId, value: Number(input.value) }),
    };
  });
}

/** Fields for `specs` and their conditional children: `read()` gives the active parameters as
 * the API takes them. */
function parameterFields(specs) {
  return specs.map((spec) => parameterField(spec));
}

function parameterField(spec) {
  const id = spec.parameterId;
  let input;
  let value;
  if (spec.doubleValueSpec || spec.integerValueSpec) {
    const range = spec.doubleValueSpec || spec.integerValueSpec;
    const integer = Boolean(spec.integerValueSpec);
    input = el("input", { name: id, "data-parameter": id, type: "number", required: true, size: 10,
      min: range.minValue ?? 0, max: range.maxValue, step: integer ? 1 : "any", title: `${num(Number(range.minValue ?? 0))} to ${num(Number(range.maxValue))}` });
    value = () => (input.value === "" ? null : Number(input.value));
  } else {
    const options = spec.discreteValueSpec ? spec.discreteValueSpec.values : spec.categoricalValueSpec?.values || [];
    input = el("select", { name: id, "data-parameter": id, required: true },
      el("option", { value: "" }, "choose…"), ...options.map((v) => el("option", { value: String(v) }, String(v))));
    value = () => (input.value === "" ? null : spec.discreteValueSpec ? Number(input.value) : input.value);
  }
  const children = (spec.conditionalParameterSpecs || []).map((c) => ({
    when: (c.parentCategoricalValues?.values || c.parentDiscreteValues?.values || c.parentIntValues?.values || []).map(String),
    field: parameterField(c.parameterSpec),
  }));
  const nested = el("div", { class: "children" }, ...children.map((c) => c.field.root));
  const root = el("div", { class: "param", "data-param": id }, el("label", {}, `${id} `, input), nested);
  const shown = () => {
    const v = input.value;
    for (const c of children) {
      const on = v !== "" && c.when.includes(String(spec.discreteValueSpec || spec.integerValueSpec ? Number(v) : v));
      c.field.root.hidden = !on;
      // A hidden field is not required: the browser would refuse to submit the form.
      c.field.setActive(on);
    }
  };
  input.addEventListener("change", shown);
  input.addEventListener("input", shown);
  let active = true;
  const field = {
    root,
    setActive(on) {
      active = on;
      input.required = on;
      if (!on) for (const c of children) c.field.setActive(false);
      else shown();
    },
    read() {
      if (!active) return [];
      const v = value();
      const own = v === null ? [] : [{ parameterId: id, value: v }];
      return [...own, ...children.flatMap((c) => c.field.read())];
    },
  };
  shown();
  return field;
}
