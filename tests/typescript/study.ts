// The curl walk-through of docs/api.md, in TypeScript: a client generated from
// openapi/openapi.json by openapi-typescript with its default options, called through
// openapi-fetch. It must type-check under `strict` as written (no casts, no optional fields
// spelled out), then run against the real server. `node study.js BASE_URL`.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

declare const process: { argv: string[]; exit(code: number): never };

const base = process.argv[2];
const client = createClient<paths>({ baseUrl: base });
const at = { project: "demo", location: "local" };

function check(ok: boolean, what: string): asserts ok {
  if (!ok) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

const created = await client.POST("/v1/projects/{project}/locations/{location}/studies", {
  params: { path: at },
  body: {
    displayName: "mnist-mlp",
    studySpec: {
      metrics: [{ metricId: "accuracy", goal: "MAXIMIZE" }],
      algorithm: "QUASI_RANDOM_SEARCH",
      parameters: [
        {
          parameterId: "optimizer",
          categoricalValueSpec: { values: ["sgd", "adam"] },
          conditionalParameterSpecs: [
            {
              parentCategoricalValues: { values: ["sgd"] },
              parameterSpec: { parameterId: "momentum", doubleValueSpec: { minValue: 0.0, maxValue: 0.99 } },
            },
            {
              parentCategoricalValues: { values: ["adam"] },
              parameterSpec: { parameterId: "beta1", doubleValueSpec: { minValue: 0.8, maxValue: 0.999 } },
            },
          ],
        },
        { parameterId: "learning_rate", doubleValueSpec: { minValue: 1e-5, maxValue: 0.1 }, scaleType: "UNIT_LOG_SCALE" },
        { parameterId: "layers", integerValueSpec: { minValue: "1", maxValue: "8" } },
      ],
    },
  },
});
// An operation's `response` is any message (a SuggestTrialsResponse here): read it with a guard.
function trialIds(response: unknown): string[] {
  if (typeof response !== "object" || response === null || !("trials" in response) || !Array.isArray(response.trials)) {
    return [];
  }
  return response.trials.map((t: unknown) => (typeof t === "object" && t !== null && "id" in t && typeof t.id === "string" ? t.id : ""));
}

const name = created.data?.name ?? "";
check(name !== "", `create: ${JSON.stringify(created.error)}`);
const study = name.split("/").pop() ?? "";

const found = await client.POST("/v1/projects/{project}/locations/{location}/studies:lookup", {
  params: { path: at },
  body: { displayName: "mnist-mlp" },
});
check(found.data?.name === name, "lookup");

const suggested = await client.POST("/v1/projects/{project}/locations/{location}/studies/{study}/trials:suggest", {
  params: { path: { ...at, study } },
  body: { suggestionCount: 2, clientId: "worker-1" },
});
const response = suggested.data?.response;
check(suggested.data?.done === true && response !== undefined, `suggest: ${JSON.stringify(suggested.error)}`);
const ids = trialIds(response);
check(ids.length === 2, "two trials");
const [first, second] = ids;

const measured = await client.POST(
  "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:addTrialMeasurement",
  {
    params: { path: { ...at, study, trial: first } },
    body: { measurement: { stepCount: "100", metrics: [{ metricId: "accuracy", value: 0.91 }] } },
  },
);
check(measured.data?.measurements?.length === 1, `addTrialMeasurement: ${JSON.stringify(measured.error)}`);

const completed = await client.POST("/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:complete", {
  params: { path: { ...at, study, trial: first } },
  body: { finalMeasurement: { stepCount: "200", metrics: [{ metricId: "accuracy", value: 0.94 }] } },
});
check(completed.data?.state === "SUCCEEDED", `complete: ${JSON.stringify(completed.error)}`);

const infeasible = await client.POST("/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:complete", {
  params: { path: { ...at, study, trial: second } },
  body: { trialInfeasible: true, infeasibleReason: "out of memory" },
});
check(infeasible.data?.state === "INFEASIBLE", "complete infeasible");

const optimal = await client.POST("/v1/projects/{project}/locations/{location}/studies/{study}/trials:listOptimalTrials", {
  params: { path: { ...at, study } },
  body: {},
});
check(optimal.data?.optimalTrials?.[0]?.id === first, "listOptimalTrials");

const page = await client.GET("/v1/projects/{project}/locations/{location}/studies/{study}/trials", {
  params: { path: { ...at, study }, query: { pageSize: 1 } },
});
check(page.data?.trials?.length === 1 && page.data.nextPageToken !== undefined, "ListTrials page");

const deleted = await client.DELETE("/v1/projects/{project}/locations/{location}/studies/{study}", {
  params: { path: { ...at, study } },
});
check(deleted.response.status === 200, "delete");
const gone = await client.GET("/v1/projects/{project}/locations/{location}/studies/{study}", { params: { path: { ...at, study } } });
check(gone.response.status === 404, "gone");
console.log("a whole study in TypeScript: ok");
