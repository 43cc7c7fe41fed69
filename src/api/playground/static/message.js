// One turn of the conversation. Everything here is model or user text rendered as Preact children, which
// escapes it: a reply that contains HTML or a script shows as text.

import {h} from "preact";
import htm from "htm";
import {cacheShare} from "./api.js";
import {checkReply} from "./json.js";
import {JsonView} from "./panels.js";

const html = htm.bind(h);

function Timings({t}) {
  if (!t) return null;
  const share = cacheShare(t);
  return html`<div class="timings" data-testid="timings">
    <span title="prompt tokens evaluated / time">prompt ${t.prompt_n} tok · ${Math.round(t.prompt_ms)} ms</span>
    <span title="generated tokens / speed">predicted ${t.predicted_n} tok · ${t.predicted_per_second.toFixed(1)} tok/s</span>
    <span title="prompt tokens served from the cache"
      data-testid="cache-share">cache ${t.cache_n} of ${t.cache_n + t.prompt_n} (${Math.round(share * 100)}%)</span>
    ${t.draft_n > 0 ? html`<span>drafts ${t.draft_n_accepted}/${t.draft_n}</span>` : null}
  </div>`;
}

function ToolCard({call}) {
  let pretty = call.args;
  try {
    pretty = JSON.stringify(JSON.parse(call.args), null, 2);
  } catch {
    // Still streaming, or not JSON: shown as sent.
  }
  return html`<div class="tool-card" data-testid="tool-call">
    <div class="tool-head">tool call <b>${call.name}</b> <small class="muted">${call.id}</small></div>
    <${JsonView} text=${pretty} />
  </div>`;
}

function SchemaCheck({schema, text}) {
  const r = checkReply(schema, text);
  return html`<div class="schema-check">
    <div class=${r.ok ? "badge ok" : "badge bad"} data-testid="schema-verdict">${r.ok ? "valid against the schema" : "does not match the schema"}</div>
    ${r.errors.length ? html`<ul class="error">${r.errors.map((e) => html`<li>${e}</li>`)}</ul>` : null}
    <${JsonView} text=${r.pretty} testid="schema-json" />
  </div>`;
}

export function Message({m}) {
  if (m.role === "user") {
    return html`<div class="msg user" data-testid="user-msg">
      ${m.pictures?.length ? html`<div class="pictures">${m.pictures.map((url) => html`<img src=${url} alt="sent picture" />`)}</div>` : null}
      <div class="text">${m.content}</div></div>`;
  }
  const r = m.reply;
  const tools = Object.values(r.tools);
  const live = m.state === "streaming";
  return html`<div class=${`msg assistant ${m.state}`} data-testid="assistant-msg" data-state=${m.state}>
    <div class="meta"><small>${m.route}</small>${live ? html`<small class="live">streaming… (Esc stops)</small>` : null}
      ${m.state === "stopped" ? html`<small class="muted">stopped</small>` : null}
      ${r.finish ? html`<small class="muted">finish: ${r.finish}</small>` : null}</div>
    ${r.reasoning ? html`<details class="reasoning" open=${live && !r.text} data-testid="reasoning">
      <summary>reasoning</summary><div class="text">${r.reasoning}</div></details>` : null}
    ${tools.map((c) => html`<${ToolCard} call=${c} />`)}
    ${m.schema && !live && r.text ? html`<${SchemaCheck} schema=${m.schema} text=${r.text} />`
      : html`<div class="text answer" data-testid="answer">${r.text}</div>`}
    ${r.error ? html`<p class="error" data-testid="reply-error">${r.error}</p>` : null}
    <${Timings} t=${r.timings} />
  </div>`;
}
