// The image form, shown when the server has an image model: a prompt, size, n and seed, drawn with
// /v1/images/generations; with an attached picture (dropped, pasted or picked) an edit, or a variation when the
// prompt is empty. Each draw is a card with its pictures, the seed of each (picture i at seed + i) and the time it
// took, or the server's error message. Left column: the form; middle: the cards, newest first.

import {h} from "preact";
import {useRef, useState} from "preact/hooks";
import htm from "htm";
import {EDIT_SIZES, IMAGE_SIZES, Unauthorized, call, errorMessage, imageRequest, imageResult, pictureInput} from "./api.js";

const html = htm.bind(h);

const LABELS = {generations: "generation", edits: "edit", variations: "variation"};

function Run({r}) {
  return html`<div class=${`msg assistant image-run ${r.state}`} data-testid="image-run" data-state=${r.state}>
    <div class="meta"><small>${LABELS[r.kind]} · ${r.size}${r.n ? ` · n ${r.n}` : ""}</small>
      ${r.state === "drawing" ? html`<small class="live">drawing…</small>` : null}
      ${r.state === "stopped" ? html`<small class="muted">stopped</small>` : null}
      ${r.ms !== null ? html`<small class="muted" data-testid="image-time">${(r.ms / 1000).toFixed(1)} s</small>` : null}</div>
    ${r.prompt ? html`<div class="text">${r.prompt}</div>` : null}
    ${r.urls.length ? html`<div class="drawn">${r.urls.map((url, i) => html`<figure>
      <img src=${url} alt=${`picture ${i + 1}`} data-testid="drawn-picture" />
      <figcaption class="muted" data-testid="drawn-seed">${r.seed !== null ? `seed ${r.seed + i}` : ""}</figcaption></figure>`)}</div>` : null}
    ${r.error ? html`<p class="error" data-testid="image-error">${r.error}</p>` : null}
  </div>`;
}

export function Images({model, hidden, onUnauthorized}) {
  const [form, setForm] = useState({prompt: "", size: "256x256", n: "1", seed: ""});
  // The attached picture: the file as sent, and a data URL to show it (the page's policy allows data: pictures).
  const [picture, setPicture] = useState(null);
  const [runs, setRuns] = useState([]);
  const [busy, setBusy] = useState(false);
  const abortRef = useRef(null);
  const nextId = useRef(0);

  const field = (k) => (e) => setForm({...form, [k]: e.currentTarget.value});
  const attach = (files) => {
    const file = [...files].find((f) => f.type.startsWith("image/"));
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => setPicture({file, url: String(reader.result)});
    reader.readAsDataURL(file);
    // Edits and variations draw 512x512 only.
    setForm((f) => (EDIT_SIZES.includes(f.size) ? f : {...f, size: "auto"}));
  };
  const {onPaste, onDrop} = pictureInput(attach);

  const draw = async () => {
    if (busy) return;
    const req = imageRequest(form, model, picture?.file ?? null);
    const id = nextId.current++;
    const run = {id, kind: req.kind, prompt: form.prompt.trim(), size: form.size || "auto", n: form.n, state: "drawing", urls: [], seed: null,
      ms: null, error: null};
    const update = (patch) => setRuns((rs) => rs.map((r) => (r.id === id ? {...r, ...patch} : r)));
    setRuns((rs) => [run, ...rs]);
    setBusy(true);
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    const started = performance.now();
    try {
      const res = await call(req.path, {method: "POST", body: req.body, signal: ctrl.signal});
      const body = await res.json().catch(() => null);
      const ms = performance.now() - started;
      if (!res.ok) update({state: "error", error: errorMessage(body, res.status), ms});
      else update({state: "done", ...imageResult(body), ms});
    } catch (e) {
      if (e instanceof Unauthorized) {
        setRuns((rs) => rs.filter((r) => r.id !== id));
        onUnauthorized();
      } else if (e.name === "AbortError") update({state: "stopped"});
      else update({state: "error", error: e.message});
    } finally {
      abortRef.current = null;
      setBusy(false);
    }
  };
  const onKeyDown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      draw();
    }
  };

  const sizes = picture ? EDIT_SIZES : ["auto", ...IMAGE_SIZES];
  const action = !picture ? "draws a new picture" : form.prompt.trim() ? "edits the picture (512x512)" : "draws variations of the picture (512x512)";
  return html`
    <section class="settings image-form" data-testid="image-form" hidden=${hidden} onDragOver=${(e) => e.preventDefault()} onDrop=${onDrop}>
      <h2>Image <span class="muted">${model}</span></h2>
      <label>Prompt<textarea rows="4" data-testid="image-prompt" value=${form.prompt} onInput=${field("prompt")} onKeyDown=${onKeyDown}
        onPaste=${onPaste} placeholder="What to draw (Enter draws; paste or drop a picture to edit it)"></textarea></label>
      <div class="grid2">
        <label>size<select data-testid="image-size" value=${form.size} onChange=${field("size")}>
          ${sizes.map((v) => html`<option value=${v}>${v === "auto" ? "auto (512x512)" : v}</option>`)}</select></label>
        <label>n<select data-testid="image-n" value=${form.n} onChange=${field("n")}>
          ${["1", "2", "3", "4"].map((v) => html`<option value=${v}>${v}</option>`)}</select></label>
        <label>seed<input type="number" step="1" placeholder="random" data-testid="image-seed" value=${form.seed} onInput=${field("seed")} /></label>
      </div>
      <label>Picture to edit (optional)<input type="file" accept="image/*" data-testid="image-file"
        onChange=${(e) => { attach(e.currentTarget.files ?? []); e.currentTarget.value = ""; }} /></label>
      ${picture ? html`<div class="pictures"><span class="picture">
        <img src=${picture.url} alt="picture to edit" data-testid="image-attached" />
        <button title="remove" onClick=${() => setPicture(null)}>×</button></span></div>` : null}
      <p class="muted">${action}</p>
      <div class="row">
        <button data-testid="image-draw" onClick=${draw} disabled=${busy}>${busy ? "Drawing…" : "Draw"}</button>
        ${busy ? html`<button data-testid="image-stop" onClick=${() => abortRef.current?.abort()}>Stop</button>` : null}
        <button onClick=${() => setRuns([])} disabled=${busy}>Clear</button>
      </div>
    </section>
    <section class="chat" hidden=${hidden}>
      <div class="messages" data-testid="image-runs">
        ${runs.length === 0 ? html`<p class="muted hint">Write a prompt on the left and press Draw.</p>` : null}
        ${runs.map((r) => html`<${Run} key=${r.id} r=${r} />`)}
      </div>
    </section>`;
}
