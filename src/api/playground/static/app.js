// The playground: settings on the left, the conversation in the middle, the server's state on the right. With an
// image model loaded, an Images view puts the image form (images.js) in place of the settings and the conversation.
// Keyboard: Enter sends, Shift+Enter is a new line, Esc stops the reply (the fetch is aborted; the server sees
// the hang-up and releases the region).

import {h, render} from "preact";
import {useEffect, useRef, useState} from "preact/hooks";
import htm from "htm";
import {ROUTES, Unauthorized, applyEvent, buildRequest, call, callJson, emptyReply, errorMessage, getKey, pictureInput, readSse,
  setKey} from "./api.js";
import {Images} from "./images.js";
import {Message} from "./message.js";
import {Handles, ServerView, SideModels} from "./panels.js";
import {Settings, defaultSettings} from "./settings.js";

const html = htm.bind(h);

function KeyDialog({reason, onSave, onCancel}) {
  const [value, setValue] = useState("");
  const submit = (e) => {
    e.preventDefault();
    if (value.trim()) onSave(value.trim());
  };
  return html`<div class="overlay"><form class="dialog" data-testid="key-dialog" onSubmit=${submit}>
    <h2>API key</h2>
    <p>${reason || "This server needs an API key."} It is kept in this tab's session storage only and sent as
      <code>Authorization: Bearer</code> on each call.</p>
    <input type="password" autocomplete="off" autofocus data-testid="key-input" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} />
    <div class="row"><button type="submit" data-testid="key-save">Use key</button><button type="button" onClick=${onCancel}>Cancel</button></div>
  </form></div>`;
}

/** The text of earlier turns, as the next request's history (failed or empty replies are left out). */
function historyOf(messages) {
  return messages.flatMap((m) => {
    if (m.role === "user") return [{role: "user", content: m.content, pictures: m.pictures}];
    return m.reply.text && m.state !== "error" ? [{role: "assistant", content: m.reply.text}] : [];
  });
}

function App() {
  const [settings, setSettings] = useState(defaultSettings);
  const [messages, setMessages] = useState([]);
  const [input, setInput] = useState("");
  // Pictures pasted or dropped on the composer, as data URLs, sent with the next message.
  const [pictures, setPictures] = useState([]);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState("");
  const [keyAsk, setKeyAsk] = useState(null);
  const [health, setHealth] = useState(null);
  const [modelId, setModelId] = useState("");
  const [showServer, setShowServer] = useState(true);
  const [view, setView] = useState("chat");
  const [handlesTick, setHandlesTick] = useState(0);
  const abortRef = useRef(null);
  // Closed by hand: the panels' polls do not reopen it every second (a send or the header button does).
  const keyDismissed = useRef(false);

  const askKey = () => setKeyAsk(getKey() ? "The key was refused." : "This server needs an API key.");
  const onError = (e) => {
    if (e instanceof Unauthorized && !keyDismissed.current) askKey();
  };

  const load = async () => {
    try {
      setHealth(await callJson("/health"));
      const models = await callJson("/v1/models");
      setModelId(models.data?.[0]?.id ?? "");
      setNotice("");
    } catch (e) {
      if (e instanceof Unauthorized) setKeyAsk(getKey() ? "The key was refused." : "This server needs an API key.");
      else setNotice(`cannot reach the server: ${e.message}`);
    }
  };
  useEffect(() => void load(), []);

  useEffect(() => {
    const onKey = (e) => {
      if (e.key === "Escape" && abortRef.current) {
        e.preventDefault();
        abortRef.current.abort();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const attach = (files) => {
    for (const file of files) {
      if (!file.type.startsWith("image/")) continue;
      const reader = new FileReader();
      reader.onload = () => setPictures((p) => [...p, String(reader.result)]);
      reader.readAsDataURL(file);
    }
  };
  const {onPaste, onDrop} = pictureInput(attach);

  const send = async () => {
    const text = input.trim();
    const attached = pictures;
    if ((!text && attached.length === 0) || busy) return;
    let schema = null;
    let tools = null;
    try {
      if (settings.schemaOn) schema = JSON.parse(settings.schema);
      if (settings.tools.trim()) tools = JSON.parse(settings.tools);
      if (tools && !Array.isArray(tools)) throw new Error("the tools box holds a JSON array");
    } catch (e) {
      return setNotice(`${settings.schemaOn ? "schema or tools box" : "tools box"}: ${e.message}`);
    }
    setNotice("");
    const route = settings.route;
    const body = buildRequest(route, [...historyOf(messages), {role: "user", content: text, pictures: attached}], settings, schema, tools);
    const headers = {};
    if (settings.keep) headers["X-Svc-Keep"] = settings.keep;
    if (settings.from) headers["X-Svc-From"] = settings.from;
    const before = messages;
    const reply = emptyReply();
    let state = "streaming";
    const show = () => setMessages([...before, {role: "user", content: text, pictures: attached},
      {role: "assistant", route: ROUTES[route].label, state, schema, reply: {...reply, tools: {...reply.tools}}}]);
    // One render per animation frame, however fast tokens arrive.
    let queued = false;
    const schedule = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        show();
      });
    };
    show();
    setInput("");
    setPictures([]);
    setBusy(true);
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    try {
      const res = await call(ROUTES[route].path, {method: "POST", body, headers, signal: ctrl.signal});
      if (!res.ok) reply.error = errorMessage(await res.json().catch(() => null), res.status);
      else for await (const ev of readSse(res)) {
        applyEvent(route, reply, ev);
        schedule();
      }
      state = reply.error ? "error" : "done";
    } catch (e) {
      if (e instanceof Unauthorized) {
        setMessages(before);
        setInput(text);
        setPictures(attached);
        setKeyAsk(getKey() ? "The key was refused." : "This server needs an API key.");
        return;
      }
      if (e.name === "AbortError") state = "stopped";
      else {
        reply.error = e.message;
        state = "error";
      }
    } finally {
      abortRef.current = null;
      setBusy(false);
    }
    show();
    if (settings.keep) setHandlesTick((n) => n + 1);
  };

  const onKeyDown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  };

  const sessions = health?.prompt_cache?.sessions;
  const side = health?.side_models?.models ?? [];
  const imageModel = side.find((m) => m.kind === "image")?.id;
  const chat = !imageModel || view === "chat";
  return html`
    <header>
      <h1>svc playground</h1>
      <span class="muted" data-testid="model">${modelId}</span>
      ${imageModel ? html`<nav class="routes">${[["chat", "Chat"], ["images", "Images"]].map(([id, label]) => html`<label>
        <input type="radio" name="view" data-testid=${`view-${id}`} checked=${view === id} onChange=${() => setView(id)} /> ${label}</label>`)}</nav>` : null}
      <nav class="routes" hidden=${!chat}>${Object.entries(ROUTES).map(([id, r]) => html`<label>
        <input type="radio" name="route" data-testid=${`route-${id}`} checked=${settings.route === id}
          onChange=${() => setSettings({...settings, route: id})} /> ${r.label}</label>`)}</nav>
      <span class="spacer"></span>
      <button onClick=${() => setShowServer(!showServer)}>${showServer ? "Hide" : "Show"} server</button>
      <button onClick=${() => setKeyAsk("Set the key for this tab.")}>${getKey() ? "Key set" : "API key"}</button>
      ${getKey() ? html`<button onClick=${() => { setKey(""); setModelId(""); load(); }}>Forget key</button>` : null}
    </header>
    <main class=${showServer ? "" : "wide"}>
      <${Settings} s=${settings} set=${setSettings} sessions=${sessions} hidden=${!chat} />
      <section class="chat" hidden=${!chat}>
        <div class="messages" data-testid="messages">
          ${messages.length === 0 ? html`<p class="muted hint">Write a message below. Enter sends, Shift+Enter is a new line, Esc stops the reply.</p>` : null}
          ${messages.map((m) => html`<${Message} m=${m} />`)}
        </div>
        ${notice ? html`<p class="error" data-testid="notice">${notice}</p>` : null}
        ${pictures.length ? html`<div class="pictures" data-testid="attached">${pictures.map((url, i) => html`<span class="picture">
          <img src=${url} alt="attached picture" data-testid="attached-picture" />
          <button title="remove" onClick=${() => setPictures(pictures.filter((_, j) => j !== i))}>×</button></span>`)}</div>` : null}
        <div class="composer" onDragOver=${(e) => e.preventDefault()} onDrop=${onDrop}>
          <textarea data-testid="composer" rows="3" placeholder="Message (Enter sends, Shift+Enter new line, Esc stops; paste or drop a picture)"
            value=${input} onInput=${(e) => setInput(e.currentTarget.value)} onKeyDown=${onKeyDown} onPaste=${onPaste}></textarea>
          <div class="col">
            ${busy ? html`<button data-testid="stop" onClick=${() => abortRef.current?.abort()}>Stop</button>`
              : html`<button data-testid="send" onClick=${send}>Send</button>`}
            <button onClick=${() => setMessages([])} disabled=${busy}>Clear</button>
          </div>
        </div>
      </section>
      ${imageModel ? html`<${Images} model=${imageModel} hidden=${chat} onUnauthorized=${askKey} />` : null}
      ${showServer ? html`<aside>
        <${ServerView} onError=${onError} />
        ${sessions ? html`<${Handles} refreshKey=${handlesTick} onError=${onError}
          onUse=${(from, keep) => setSettings({...settings, from, keep})} />` : null}
        ${side.length ? html`<${SideModels} models=${side} onError=${onError} />` : null}
      </aside>` : null}
    </main>
    ${keyAsk !== null ? html`<${KeyDialog} reason=${keyAsk} onCancel=${() => { keyDismissed.current = true; setKeyAsk(null); }}
      onSave=${(k) => { keyDismissed.current = false; setKey(k); setKeyAsk(null); load(); }} />` : null}`;
}

render(html`<${App} />`, document.getElementById("app"));
