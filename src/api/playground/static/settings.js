// The request settings: sampling and budget fields (empty means the server's default), reasoning effort, the
// tools box, the JSON-schema box and, with SVC_FORK=1, the session headers.

import {h} from "preact";
import htm from "htm";

const html = htm.bind(h);

export const EXAMPLE_SCHEMA = JSON.stringify({
  type: "object",
  properties: {
    city: {type: "string", maxLength: 40},
    country: {type: "string", maxLength: 40},
    population_millions: {type: "number"},
  },
  required: ["city", "country", "population_millions"],
  additionalProperties: false,
}, null, 2);

export const EXAMPLE_TOOLS = JSON.stringify([{
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city",
    parameters: {type: "object", properties: {city: {type: "string"}}, required: ["city"]},
  },
}], null, 2);

export const defaultSettings = {
  route: "chat", system: "", max_tokens: "256", temperature: "", top_p: "", top_k: "", min_p: "", seed: "",
  effort: "", tools: "", schemaOn: false, schema: EXAMPLE_SCHEMA, keep: "", from: "",
};

const NUMBERS = [
  ["max_tokens", "max tokens", "1"], ["temperature", "temperature", "0.05"], ["top_p", "top_p", "0.05"],
  ["top_k", "top_k", "1"], ["min_p", "min_p", "0.01"], ["seed", "seed", "1"],
];

export function Settings({s, set, sessions, hidden}) {
  const field = (k) => (e) => set({...s, [k]: e.currentTarget.type === "checkbox" ? e.currentTarget.checked : e.currentTarget.value});
  return html`<section class="settings" data-testid="settings" hidden=${hidden}>
    <h2>Settings</h2>
    <label>System<textarea rows="3" data-testid="system" value=${s.system} onInput=${field("system")}></textarea></label>
    <div class="grid2">
      ${NUMBERS.map(([k, label, step]) => html`<label>${label}<input type="number" step=${step} placeholder="default"
        data-testid=${`field-${k}`} value=${s[k]} onInput=${field(k)} /></label>`)}
    </div>
    <label>reasoning effort<select value=${s.effort} onChange=${field("effort")} data-testid="field-effort">
      ${["", "none", "low", "medium", "high"].map((v) => html`<option value=${v}>${v || "default"}</option>`)}
    </select></label>
    <details open=${!!s.tools}>
      <summary>Tools</summary>
      <textarea rows="6" class="code" placeholder="[] (function tools, chat shape)" data-testid="tools-text"
        value=${s.tools} onInput=${field("tools")}></textarea>
      <button onClick=${() => set({...s, tools: s.tools ? "" : EXAMPLE_TOOLS})}>${s.tools ? "Clear" : "Example"}</button>
    </details>
    <label class="check"><input type="checkbox" data-testid="schema-on" checked=${s.schemaOn} onChange=${field("schemaOn")} />
      answer under a JSON schema</label>
    ${s.schemaOn ? html`<textarea rows="12" class="code" data-testid="schema-text" value=${s.schema} onInput=${field("schema")}></textarea>` : null}
    ${sessions ? html`<div class="sessions">
      <h3>Session</h3>
      <label>keep as (X-Svc-Keep)<input data-testid="field-keep" value=${s.keep} onInput=${field("keep")} placeholder="name" /></label>
      <label>start from (X-Svc-From)<input data-testid="field-from" value=${s.from} onInput=${field("from")} placeholder="name" /></label>
    </div>` : null}
  </section>`;
}
