// The page's side of the HTTP API: the key (session storage only, so it goes when the tab closes), calls that
// carry it, an SSE reader, and per route the request body and a reducer that folds stream events into one
// reply. The reducers are the only place that knows each route's event shapes.

const KEY_ITEM = "svc.apiKey";

export const getKey = () => sessionStorage.getItem(KEY_ITEM) ?? "";
export const setKey = (key) => (key ? sessionStorage.setItem(KEY_ITEM, key) : sessionStorage.removeItem(KEY_ITEM));

/** A 401: the page asks for the key. */
export class Unauthorized extends Error {}

export function errorMessage(body, status) {
  if (typeof body === "string" && body) return body;
  return body?.error?.message ?? body?.message ?? `HTTP ${status}`;
}

export async function call(path, {method = "GET", body, headers = {}, signal} = {}) {
  const h = {...headers};
  const key = getKey();
  if (key) h.authorization = `Bearer ${key}`;
  // A FormData goes as multipart, with the boundary the browser writes into its own content-type.
  const form = typeof FormData !== "undefined" && body instanceof FormData;
  if (body !== undefined && !form) h["content-type"] = "application/json";
  const res = await fetch(path, {method, headers: h, body: body === undefined || form ? body : JSON.stringify(body), signal});
  if (res.status === 401) throw new Unauthorized(errorMessage(await res.json().catch(() => null), 401));
  return res;
}

export async function callJson(path, options) {
  const res = await call(path, options);
  const text = await res.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (e.g. /metrics): the text itself.
  }
  if (!res.ok) throw new Error(errorMessage(body, res.status));
  return body;
}

/** Server-sent events as {event, data}; keepalive comments are dropped, data is parsed JSON (or the raw text). */
export async function* readSse(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += value.replace(/\r/g, "");
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length === 0) continue;
      const raw = data.join("\n");
      let parsed = raw;
      try {
        parsed = JSON.parse(raw);
      } catch {
        // [DONE] and the like.
      }
      yield {event, data: parsed};
    }
  }
}

export const ROUTES = {
  chat: {label: "Chat Completions", path: "/v1/chat/completions"},
  responses: {label: "Responses", path: "/v1/responses"},
  messages: {label: "Messages", path: "/v1/messages"},
};

const num = (v) => (v === "" || v === undefined || v === null ? undefined : Number(v));

function sampling(s) {
  const out = {};
  for (const k of ["temperature", "top_p", "top_k", "min_p", "seed"]) {
    const v = num(s[k]);
    if (v !== undefined && Number.isFinite(v)) out[k] = v;
  }
  return out;
}

/** The tools box holds OpenAI chat-style function tools; each route gets its own shape. */
function toolsFor(route, tools) {
  if (!tools || tools.length === 0) return {};
  const fns = tools.map((t) => t.function ?? t);
  if (route === "chat") return {tools: fns.map((f) => ({type: "function", function: f}))};
  if (route === "responses") {
    return {tools: fns.map((f) => ({type: "function", name: f.name, description: f.description,
      parameters: f.parameters ?? {type: "object", properties: {}}, strict: f.strict ?? false}))};
  }
  return {tools: fns.map((f) => ({name: f.name, description: f.description, input_schema: f.parameters ?? {type: "object", properties: {}}}))};
}

/**
 * The body for one turn. `history` is [{role: "user" | "assistant", content}]; `schema` and `tools` are parsed
 * already (or null).
 */
/** A user turn with pictures (data URLs) as the route writes content parts; text alone stays a string. */
function contentOf(route, m) {
  if (!m.pictures?.length) return m.content;
  const text = m.content ? [route === "responses" ? {type: "input_text", text: m.content} : {type: "text", text: m.content}] : [];
  const parts = m.pictures.map((url) => {
    if (route === "chat") return {type: "image_url", image_url: {url}};
    if (route === "responses") return {type: "input_image", image_url: url};
    const [, mediaType, data] = /^data:([^;,]+);base64,(.*)$/s.exec(url) ?? [null, "image/png", ""];
    return {type: "image", source: {type: "base64", media_type: mediaType, data}};
  });
  return [...parts, ...text];
}

export function buildRequest(route, history, s, schema, tools) {
  const budget = num(s.max_tokens);
  const effort = s.effort || undefined;
  const msgs = history.map((m) => ({role: m.role, content: contentOf(route, m)}));
  if (route === "chat") {
    return {
      messages: s.system ? [{role: "system", content: s.system}, ...msgs] : msgs,
      stream: true,
      stream_options: {include_usage: true},
      ...(budget !== undefined ? {max_tokens: budget} : {}),
      ...sampling(s),
      ...(effort ? {reasoning_effort: effort} : {}),
      ...(schema ? {response_format: {type: "json_schema", json_schema: {name: "reply", schema, strict: true}}} : {}),
      ...toolsFor(route, tools),
    };
  }
  if (route === "responses") {
    return {
      input: msgs,
      ...(s.system ? {instructions: s.system} : {}),
      stream: true,
      ...(budget !== undefined ? {max_output_tokens: budget} : {}),
      ...sampling(s),
      ...(effort ? {reasoning: {effort}} : {}),
      ...(schema ? {text: {format: {type: "json_schema", name: "reply", schema, strict: true}}} : {}),
      ...toolsFor(route, tools),
    };
  }
  const outputConfig = {...(effort ? {effort} : {}), ...(schema ? {format: {type: "json_schema", schema}} : {})};
  return {
    messages: msgs,
    ...(s.system ? {system: s.system} : {}),
    stream: true,
    // Required on this route; the server caps it.
    max_tokens: budget ?? 1024,
    ...sampling(s),
    ...(Object.keys(outputConfig).length ? {output_config: outputConfig} : {}),
    ...toolsFor(route, tools),
  };
}

export function emptyReply() {
  return {text: "", reasoning: "", tools: {}, timings: null, usage: null, finish: null, error: null, progress: null};
}

function tool(reply, index, init) {
  reply.tools[index] ??= {id: "", name: "", args: ""};
  Object.assign(reply.tools[index], init);
  return reply.tools[index];
}

/** Folds one stream event into the reply (mutates it). */
export function applyEvent(route, reply, {event, data}) {
  if (data === "[DONE]" || typeof data !== "object" || data === null) return;
  if (data.error || event === "error" || data.type === "error") {
    reply.error = data.error?.message ?? data.message ?? "the server reported an error";
    return;
  }
  if (data.timings) reply.timings = data.timings;
  if (route === "chat") {
    if (data.prompt_progress) reply.progress = data.prompt_progress;
    if (data.usage) reply.usage = data.usage;
    const choice = data.choices?.[0];
    if (!choice) return;
    const d = choice.delta ?? {};
    if (d.content) reply.text += d.content;
    if (d.reasoning_content) reply.reasoning += d.reasoning_content;
    for (const tc of d.tool_calls ?? []) {
      const t = tool(reply, tc.index, tc.id ? {id: tc.id} : {});
      if (tc.function?.name) t.name = tc.function.name;
      if (tc.function?.arguments) t.args += tc.function.arguments;
    }
    if (choice.finish_reason) reply.finish = choice.finish_reason;
    return;
  }
  if (route === "responses") {
    switch (data.type) {
      case "response.output_text.delta": reply.text += data.delta; break;
      case "response.reasoning_text.delta": reply.reasoning += data.delta; break;
      case "response.output_item.added":
        if (data.item?.type === "function_call") tool(reply, data.output_index, {id: data.item.call_id ?? "", name: data.item.name ?? ""});
        break;
      case "response.function_call_arguments.delta": tool(reply, data.output_index, {}).args += data.delta; break;
      case "response.completed":
      case "response.incomplete":
        reply.timings = data.response?.timings ?? reply.timings;
        reply.usage = data.response?.usage ?? reply.usage;
        reply.finish = data.response?.incomplete_details?.reason ?? data.response?.status;
        break;
      case "response.failed": reply.error = data.response?.error?.message ?? "the response failed"; break;
    }
    return;
  }
  switch (data.type) {
    case "content_block_start":
      if (data.content_block?.type === "tool_use") tool(reply, data.index, {id: data.content_block.id, name: data.content_block.name});
      break;
    case "content_block_delta": {
      const d = data.delta ?? {};
      if (d.type === "text_delta") reply.text += d.text;
      else if (d.type === "thinking_delta") reply.reasoning += d.thinking;
      else if (d.type === "input_json_delta") tool(reply, data.index, {}).args += d.partial_json;
      break;
    }
    case "message_delta":
      reply.finish = data.delta?.stop_reason ?? reply.finish;
      reply.usage = data.usage ?? reply.usage;
      break;
  }
}

/** The share of the prompt served from the cache: cache_n of (cache_n + prompt_n evaluated). */
export function cacheShare(t) {
  const total = (t?.cache_n ?? 0) + (t?.prompt_n ?? 0);
  return total > 0 ? t.cache_n / total : 0;
}

/** The sizes /v1/images/generations draws (fields.ts IMAGE_SIZES; the unit test keeps the two the same). */
export const IMAGE_SIZES = ["256x256", "512x512", "768x768", "1024x1024", "768x512", "512x768", "1024x768", "768x1024", "1024x576",
  "576x1024", "640x512", "512x640", "896x512", "512x896", "1024x448", "448x1024", "1024x512", "512x1024", "1024x640", "640x1024"];
/** Edits and variations draw 512x512 only. */
export const EDIT_SIZES = ["auto", "512x512"];

/**
 * One draw of the image form: `f` holds the form's text ({prompt, size, n, seed}, empty means the server's default),
 * `picture` the attached file or null. No picture: a JSON body for /v1/images/generations. A picture: multipart
 * for /v1/images/edits with the prompt, or /v1/images/variations without one. Values go as typed, so the server's
 * own rules (and its 400s) are the ones the page shows.
 */
export function imageRequest(f, model, picture) {
  const prompt = (f.prompt ?? "").trim();
  const fields = {model, ...(prompt || !picture ? {prompt} : {}), ...(f.size ? {size: f.size} : {}),
    ...(f.n !== "" && f.n !== undefined ? {n: Number(f.n)} : {}), ...(f.seed !== "" && f.seed !== undefined ? {seed: Number(f.seed)} : {}),
    response_format: "b64_json"};
  if (!picture) return {kind: "generations", path: "/v1/images/generations", body: fields};
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) body.append(k, String(v));
  body.append("image", picture, picture.name || "picture.png");
  const kind = prompt ? "edits" : "variations";
  return {kind, path: `/v1/images/${kind}`, body};
}

/** The pictures of an images response as data URLs, picture i drawn at seed + i. */
export function imageResult(body) {
  const urls = (body?.data ?? []).map((d) => d.url ?? `data:image/png;base64,${d.b64_json}`);
  return {urls, seed: body?.seed ?? null, size: body?.size ?? ""};
}

/**
 * Paste and drop handlers for a place that takes pictures: `attach` gets the files (pictures among them). A paste
 * without a picture is left to the text box.
 */
export function pictureInput(attach) {
  return {
    onPaste: (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (files.some((f) => f.type.startsWith("image/"))) {
        e.preventDefault();
        attach(files);
      }
    },
    onDrop: (e) => {
      e.preventDefault();
      attach([...(e.dataTransfer?.files ?? [])]);
    },
  };
}
