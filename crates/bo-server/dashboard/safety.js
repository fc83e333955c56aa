// Safety metrics (a metric with `safetyConfig`): which metrics are objectives and which are
// constraints, and whether a trial's value is on the safe side of its threshold (at least it for
// MAXIMIZE, at most for MINIMIZE; a missing value counts as safe, as the server counts it).

/** The metrics optimised: those without a safety config. */
export function objectivesOf(spec) {
  return spec.metrics.filter((m) => !m.safetyConfig);
}

/** The safety metrics, each with its threshold and target fraction (0: none). */
export function safetyOf(spec) {
  return spec.metrics.filter((m) => m.safetyConfig).map((m) => ({
    metricId: m.metricId,
    goal: m.goal,
    threshold: m.safetyConfig.safetyThreshold ?? 0,
    target: m.safetyConfig.desiredMinSafeTrialsFraction ?? 0,
  }));
}

/** Whether `value` of safety metric `s` is safe. */
export function safeValue(s, value) {
  if (value === null || value === undefined) return true;
  return s.goal === "MINIMIZE" ? value <= s.threshold : value >= s.threshold;
}

/** "≤ 0.5" or "≥ 0.5": the safe side of `s`. */
export function safeSide(s) {
  return `${s.goal === "MINIMIZE" ? "≤" : "≥"} ${s.threshold}`;
}

/** Whether succeeded row `r` of `trials` is safe on every safety metric. */
export function safeRow(trials, safety, r) {
  return safety.every((s) => safeValue(s, trials.metrics.get(s.metricId)?.[r]));
}
