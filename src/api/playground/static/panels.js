// The side panels: the live server view (/slots, /cache, the queue from /health), session handles
// (SVC_FORK=1) and the side-model routes (when loaded). Each polls or calls through api.js, so a 401 reaches
// the page's key prompt the same way as a chat turn.

import {h} from "preact";
import {useEffect, useState} from "preact/hooks";
import htm from "htm";
import {callJson} from "./api.js";
import {highlight} from "./json.js";

const html = htm.bind(h);

export function JsonView({text, testid}) {
  return html`<pre class="json" data-testid=${testid}>${highlight(text).map((r) => (r.cls ? html`<span class=${r.cls}>${r.text}</span>` : r.text))}</pre>`;
}

const pct = (x) => `${Math.round((x ?? 0) * 100)}%`;
const kb = (b) => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MiB` : `${Math.round((b ?? 0) / 1024)} KiB`);

/** Polls while shown: 1 s is quick enough to watch a region go busy and come back. */
function usePoll(load, ms, onError) {
  const [data, setData] = useState(null);
  useEffect(() => {
    let live = true;
    const tick = () => load().then((d) => live && setData(d), (e) => live && onError(e));
    tick();
    const t = setInterval(tick, ms);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, []);
  return data;
}

export function ServerView({onError}) {
  const data = usePoll(async () => {
    const [slots, cache, health] = await Promise.all([callJson("/slots"), callJson("/cache"), callJson("/health")]);
    return {slots, cache, health};
  }, 1000, onError);
  if (!data) return html`<section class="panel"><h2>Server</h2><p class="muted">loading…</p></section>`;
  const {slots, cache, health} = data;
  const busy = slots.filter((s) => s.is_processing).length;
  return html`<section class="panel" data-testid="server-view">
    <h2>Server</h2>
    <h3>Regions <span class="muted" data-testid="busy-count">${busy} busy of ${slots.length}</span></h3>
    <div class="slots">
      ${slots.map((s) => html`<div class=${`slot ${s.is_processing ? "busy" : "idle"}`} data-testid="slot" data-busy=${String(s.is_processing)}
        title=${`region ${s.id}: ${s.n_past} of ${s.n_ctx} positions`}>
        <b>#${s.id}</b> ${s.is_processing ? "busy" : "idle"}
        <div class="bar"><div style=${{width: pct(s.n_past / s.n_ctx)}}></div></div>
        <small>${s.n_past} / ${s.n_ctx}</small>
      </div>`)}
    </div>
    <h3>Queue</h3>
    <p data-testid="queue">${health.queued} waiting · longest wait ${health.longest_wait_s} s</p>
    <h3>Prompt cache ${cache.enabled ? "" : html`<span class="muted">(off)</span>`}</h3>
    <table class="kv" data-testid="cache">
      <tr><td>requests</td><td>${cache.requests} (${cache.hits} hits, ${cache.misses} misses)</td></tr>
      <tr><td>hit rate</td><td>${pct(cache.hit_rate)} of requests, ${pct(cache.token_hit_rate)} of prompt tokens</td></tr>
      <tr><td>tokens saved</td><td>${cache.tokens_saved} of ${cache.prompt_tokens}</td></tr>
      <tr><td>held</td><td>${cache.entries} conversations${cache.bytes > 0 ? `, ${kb(cache.bytes)}` : ""}, ${cache.evicted} evicted</td></tr>
      ${cache.pool
        ? html`<tr><td>sealing</td><td>${cache.pool.sealing} now, ${cache.pool.unsealed} waiting for idle, ${cache.pool.seals} done</td></tr>`
        : null}
      ${cache.disk?.enabled ? html`<tr><td>disk</td><td>${cache.disk.entries} files, ${kb(cache.disk.bytes)} of ${kb(cache.disk.budget_bytes)},
        ${cache.disk.hits} hits, ${cache.disk.writes} writes</td></tr>` : null}
    </table>
  </section>`;
}

export function Handles({refreshKey, onUse, onError}) {
  const [list, setList] = useState(null);
  const [note, setNote] = useState("");
  const load = () => callJson("/svc/handles").then(setList, onError);
  useEffect(() => void load(), [refreshKey]);
  const del = async (name) => {
    try {
      const r = await callJson(`/svc/handles/${encodeURIComponent(name)}`, {method: "DELETE"});
      setNote(r.pending ? `${name} goes when its request ends` : `${name} deleted`);
    } catch (e) {
      setNote(e.message);
    }
    load();
  };
  if (!list) return null;
  return html`<section class="panel" data-testid="handles">
    <h2>Session handles <span class="muted">${list.data.length} of ${list.max}</span></h2>
    <p class="muted">Set "keep as" in the settings to keep a reply's end state under a name; "continue" starts the next
      turn from it, "fork" does too and keeps the branch under a new name.</p>
    ${list.data.length === 0 ? html`<p class="muted">none kept</p>` : null}
    <ul class="handles">
      ${list.data.map((hd) => html`<li data-testid="handle">
        <b>${hd.name}</b> <small>${hd.tokens} tokens · ${kb(hd.bytes)} · expires in ${hd.expires_in_s} s${hd.in_use ? " · in use" : ""}</small>
        <span class="row">
          <button onClick=${() => onUse(hd.name, "")}>continue</button>
          <button onClick=${() => onUse(hd.name, `${hd.name}-fork`)}>fork</button>
          <button class="danger" onClick=${() => del(hd.name)}>delete</button>
        </span>
      </li>`)}
    </ul>
    <p class="muted">${note}</p>
  </section>`;
}

/** A body to start from per side route, for the loaded model of that kind (the tests' own examples). */
const SIDE_EXAMPLES = {
  embedding: ["/v1/embeddings", (model) => ({model, input: ["The cat sat on the mat.", "A feline rested on the rug."]})],
  reranker: ["/v1/rerank", (model) => ({model, query: "What is the capital of France?",
    documents: ["The capital of France is Paris.", "Bread is baked from flour, water and yeast."]})],
  moderation: ["/v1/moderations", (model) => ({model, input: "I will bake you a cake."})],
  decider: ["/v1/decide", (model) => ({model, state: {review: "I loved this film."},
    questions: {sentiment: {type: "choice", instructions: "What is the sentiment of the review?", criteria: {positive: null, negative: null}}}})],
  classifier: ["/classify", (model) => ({model, input: "I loved this film."})],
};

/** Long number arrays (embedding vectors) cut to their first values and a count, so the view stays readable. */
function shorten(v) {
  if (Array.isArray(v)) {
    if (v.length > 8 && v.every((x) => typeof x === "number")) return [...v.slice(0, 8), `… ${v.length - 8} more (${v.length} in all)`];
    return v.map(shorten);
  }
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shorten(x)]));
  return v;
}

export function SideModels({models, onError}) {
  const byKind = new Map();
  for (const m of models) if (m.kind in SIDE_EXAMPLES && !byKind.has(m.kind)) byKind.set(m.kind, m.id);
  const kinds = [...byKind.keys()];
  const example = (k) => JSON.stringify(SIDE_EXAMPLES[k][1](byKind.get(k)), null, 2);
  const [kind, setKind] = useState(kinds[0]);
  const [body, setBody] = useState(kinds.length ? example(kinds[0]) : "{}");
  const [out, setOut] = useState(null);
  if (kinds.length === 0) return null;
  const pick = (k) => {
    setKind(k);
    setBody(example(k));
    setOut(null);
  };
  const send = async () => {
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch (e) {
      return setOut({error: `the body is not JSON: ${e.message}`});
    }
    setOut({pending: true});
    try {
      setOut({text: JSON.stringify(shorten(await callJson(SIDE_EXAMPLES[kind][0], {method: "POST", body: parsed})), null, 2)});
    } catch (e) {
      onError(e);
      setOut({error: e.message});
    }
  };
  return html`<section class="panel" data-testid="side-models">
    <h2>Side models</h2>
    <div class="row">${kinds.map((k) =>
      html`<label><input type="radio" name="side" checked=${k === kind} onChange=${() => pick(k)} /> ${SIDE_EXAMPLES[k][0]}</label>`)}</div>
    <textarea rows="8" class="code" data-testid="side-body" value=${body} onInput=${(e) => setBody(e.currentTarget.value)}></textarea>
    <button data-testid="side-send" onClick=${send}>Send</button>
    ${out?.pending ? html`<p class="muted">…</p>` : null}
    ${out?.error ? html`<p class="error">${out.error}</p>` : null}
    ${out?.text ? html`<${JsonView} text=${out.text} testid="side-result" />` : null}
  </section>`;
}
