// The dashboard's one way to the server: the same /v1 API as every client, with the API key the
// user gave (kept in this browser until they forget it) when the server asks for one.

const KEY = "bo.apiKey";

let waitingForKey = null;

/** The header's "forget the key" button: shown while a key is kept. */
function showForget() {
  const button = document.getElementById("forget-key");
  if (!button) return;
  button.hidden = !localStorage.getItem(KEY);
  button.onclick = () => {
    localStorage.removeItem(KEY);
    // A fresh page: nothing read with the key stays on screen, and the server asks again.
    location.reload();
  };
}
showForget();

function askForKey(message) {
  if (waitingForKey) return waitingForKey;
  const dialog = document.getElementById("key-dialog");
  const form = document.getElementById("key-form");
  document.getElementById("key-error").textContent = message || "";
  waitingForKey = new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      localStorage.setItem(KEY, form.key.value.trim());
      showForget();
      form.reset();
      dialog.close();
      waitingForKey = null;
      resolve();
    };
  });
  dialog.showModal();
  return waitingForKey;
}

/** An error answer of the API, with its status and message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** `method path` (under the server's origin) with an optional JSON body; the parsed answer. */
export async function call(method, path, body) {
  for (;;) {
    const headers = { accept: "application/json" };
    const key = localStorage.getItem(KEY);
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (response.status === 401) {
      await askForKey(key ? "That key was refused." : "");
      continue;
    }
    const text = await response.text();
    const json = text ? JSON.parse(text) : {};
    if (!response.ok) throw new ApiError(response.status, json.error?.message || response.statusText);
    return json;
  }
}

/** `GET path` saved as a file (the name the server gives in Content-Disposition, else
 * `fallback`), with the same key as every call; resolves to the name and size once saved. The
 * browser holds the file until it is saved. */
export async function download(path, fallback) {
  for (;;) {
    const headers = {};
    const key = localStorage.getItem(KEY);
    if (key) headers.authorization = `Bearer ${key}`;
    const response = await fetch(path, { headers });
    if (response.status === 401) {
      await askForKey(key ? "That key was refused." : "");
      continue;
    }
    if (!response.ok) {
      const text = await response.text();
      let message = "";
      try { message = JSON.parse(text).error?.message || ""; } catch { message = ""; }
      throw new ApiError(response.status, message || response.statusText);
    }
    const blob = await response.blob();
    const named = /filename="([^"]+)"/.exec(response.headers.get("content-disposition") || "");
    const name = named ? named[1] : fallback;
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    return { name, bytes: blob.size };
  }
}

/** The location's path prefix. */
export function locationPath(project, location) {
  return `/v1/projects/${encodeURIComponent(project)}/locations/${encodeURIComponent(location)}`;
}

/** A study's algorithm as people call it: the server's default, ALGORITHM_UNSPECIFIED on the
 * wire, is AUTO (it picks by the space). */
export function algorithmName(algorithm) {
  return !algorithm || algorithm === "ALGORITHM_UNSPECIFIED" ? "AUTO" : algorithm;
}
