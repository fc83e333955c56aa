// Small formatting helpers shared by the pages.

/** An element `tag` with attributes and children (strings become text: never HTML). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

/**
 * A number for people: at most `digits` significant digits, no trailing zeros, thousands
 * separated, and an exponent (`1.23e-7`, `4.5e+12`) when the value is tiny or huge. Tables of
 * measured values use the default 6, so close trials stay apart; captions, legends and labels
 * use {@link short}.
 */
export function num(v, digits = 6) {
  if (v === undefined || v === null || typeof v !== "number" || Number.isNaN(v)) return "—";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e15) return v.toLocaleString("en");
  if (a !== 0 && (a < 1e-4 || a >= 10 ** Math.max(digits, 7))) {
    const [mantissa, exponent] = v.toExponential(digits - 1).split("e");
    return `${Number(mantissa)}e${exponent}`;
  }
  const rounded = Number(v.toPrecision(digits));
  return rounded.toLocaleString("en", { maximumFractionDigits: 20 });
}

/** A number in a caption, legend or label: three significant digits (see {@link num}). */
export function short(v) {
  return num(v, 3);
}

/** How long ago an RFC 3339 time was. */
export function ago(time) {
  if (!time) return "—";
  const s = (Date.now() - Date.parse(time)) / 1000;
  if (s < 60) return `${Math.max(0, Math.round(s))} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** A state badge. */
export function badge(state) {
  return el("span", { class: `state ${state}`, title: stateTitle(state) }, state === "STOPPED_EARLY" ? "STOPPED EARLY" : state);
}

/** A trial state in words: Vertex's, and a SUCCEEDED trial stopped early (pruned) apart. */
export function stateName(state) {
  return state === "STOPPED_EARLY" ? "stopped early" : state.toLowerCase();
}

function stateTitle(state) {
  return state === "STOPPED_EARLY" ? "SUCCEEDED after an early stop (pruned): a partial result, its value a point on a curve cut short" : state;
}

/** Tick steps for an axis of whole numbers (trial ids, steps). */
export const INTEGER_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];
