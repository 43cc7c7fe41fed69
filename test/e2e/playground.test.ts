// The playground page (GET /) in headless Chromium against the real server on the real model, with an API key,
// session handles and an embedding side model on: the page asks for the key and keeps it in session storage
// only; a message streams into a reply with its timings on each of the three routes; Esc stops a reply and the
// server frees its region; a JSON schema gets a validated, highlighted reply; handles are kept and deleted; the
// side route answers. Model text the page cannot get from the real model on demand (HTML, a script, reasoning,
// tool calls) comes from a scripted stream the browser is handed instead of the server's.

import assert from "node:assert/strict";
import {request} from "node:http";
import {after, before, describe, test} from "node:test";
import type {Browser, Page} from "playwright-core";
import {get, startServer, type RunningServer} from "../../support/server.ts";
import {collectErrors, launch, screenshot} from "./browser.ts";

const KEY = "playground-test-key";
const AUTH = {authorization: `Bearer ${KEY}`};

let server: RunningServer;
let browser: Browser;
let page: Page;
let errors: string[];

before(async () => {
  [server, browser] = await Promise.all([startServer({SVC_API_KEY: KEY, SVC_FORK: "1", SVC_NPU_MODELS: "nx3-embedding-0.6b"}), launch()]);
  page = await browser.newPage({viewport: {width: 1400, height: 860}});
  errors = collectErrors(page);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const lastReply = () => page.getByTestId("assistant-msg").last();

async function send(text: string): Promise<void> {
  await page.getByTestId("composer").fill(text);
  await page.getByTestId("composer").press("Enter");
}

async function finished(timeout = 90_000): Promise<void> {
  await page.locator('[data-testid=assistant-msg]:last-child:not([data-state=streaming])').waitFor({timeout});
  assert.equal(await lastReply().getAttribute("data-state"), "done", await lastReply().innerText());
}

/** Waits (at most 3 s) for the page's server view to show every region idle, so a screenshot is not a poll behind. */
async function settled(): Promise<void> {
  await page.getByTestId("busy-count").getByText(/^0 busy/).waitFor({timeout: 3_000}).catch(() => undefined);
}

async function setField(id: string, value: string): Promise<void> {
  await page.getByTestId(`field-${id}`).fill(value);
}

/** The status of a GET whose path goes out exactly as written. */
function rawStatus(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request({host: "127.0.0.1", port: server.port, path}, (res) => {
      res.resume();
      resolve(res.statusCode!);
    }).on("error", reject).end();
  });
}

async function busyRegions(): Promise<number> {
  const r = await get(`${server.url}/slots`, AUTH);
  return (r.body as {is_processing: boolean}[]).filter((s) => s.is_processing).length;
}

describe("the playground page", () => {
  test("the page and its assets load without the key; the API still needs it", async () => {
    const res = await fetch(`${server.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    assert.match(res.headers.get("content-security-policy") ?? "", /script-src 'self' 'sha256-/);
    for (const asset of ["app.js", "style.css", "vendor/preact.mjs", "vendor/hooks.mjs", "vendor/htm.mjs"]) {
      const a = await fetch(`${server.url}/playground/${asset}`);
      assert.equal(a.status, 200, asset);
    }
    // Only the listed assets are served: a ".." sent as is (fetch would resolve it first) names no asset.
    assert.equal(await rawStatus("/playground/../package.json"), 404);
    assert.equal(await rawStatus("/playground/%2e%2e/package.json"), 404);
    assert.equal((await fetch(`${server.url}/v1/models`)).status, 401);
    assert.equal((await fetch(`${server.url}/slots`)).status, 401);
  });

  test("it asks for the key, keeps it in session storage only and sends it", async () => {
    await page.goto(`${server.url}/`);
    await page.getByTestId("key-dialog").waitFor();
    await page.getByTestId("key-input").fill("wrong key");
    await page.getByTestId("key-save").click();
    await page.getByTestId("key-dialog").getByText("The key was refused.").waitFor();
    await page.getByTestId("key-input").fill(KEY);
    await page.getByTestId("key-save").click();
    await page.getByTestId("key-dialog").waitFor({state: "detached"});
    await page.getByTestId("model").getByText("svc-nx3.8-flash-next").waitFor();
    const stored = await page.evaluate(() => ({session: sessionStorage.getItem("svc.apiKey"), local: localStorage.length, cookie: document.cookie}));
    assert.deepEqual(stored, {session: KEY, local: 0, cookie: ""});
  });

  test("Shift+Enter is a new line; Enter sends; the reply streams in with its timings and cache share", async () => {
    await setField("max_tokens", "48");
    await setField("temperature", "0");
    const composer = page.getByTestId("composer");
    await composer.fill("What is the capital of France?");
    await composer.press("Shift+Enter");
    await composer.pressSequentially("Answer in one sentence.");
    assert.equal(await composer.inputValue(), "What is the capital of France?\nAnswer in one sentence.");
    const sawStreaming = page.locator("[data-testid=assistant-msg][data-state=streaming]").waitFor({timeout: 30_000});
    await composer.press("Enter");
    await sawStreaming;
    assert.equal(await composer.inputValue(), "");
    await finished();
    assert.ok((await lastReply().getByTestId("answer").innerText()).trim().length > 0);
    const timings = await lastReply().getByTestId("timings").innerText();
    assert.match(timings, /prompt \d+ tok · \d+ ms/);
    assert.match(timings, /predicted [1-9]\d* tok · [\d.]+ tok\/s/);
    assert.match(timings, /cache \d+ of \d+ \(\d+%\)/);
    await settled();
    await screenshot(page, "playground-chat");
  });

  test("a follow-up turn reuses the cached prompt and says so", async () => {
    await send("And of Italy?");
    await finished();
    const share = await lastReply().getByTestId("cache-share").innerText();
    const [, cached] = /cache (\d+) of/.exec(share)!;
    assert.ok(Number(cached) > 0, share);
  });

  for (const route of ["responses", "messages"]) {
    test(`the ${route} route streams a reply with timings`, async () => {
      await page.getByTestId(`route-${route}`).check();
      await send("Say hello.");
      await finished();
      assert.ok((await lastReply().getByTestId("answer").innerText()).trim().length > 0);
      assert.match(await lastReply().getByTestId("timings").innerText(), /predicted [1-9]\d* tok/);
    });
  }

  test("Esc stops a reply mid-stream and the server frees its region", async () => {
    await page.getByTestId("route-chat").check();
    await setField("max_tokens", "1500");
    await page.getByText("Clear").click();
    await send("Count from 1 to 1000, one number per line.");
    await page.waitForFunction(() => {
      const all = document.querySelectorAll("[data-testid=assistant-msg]");
      const last = all[all.length - 1];
      return last?.getAttribute("data-state") === "streaming" && (last.querySelector("[data-testid=answer]")?.textContent ?? "").length > 20;
    }, undefined, {timeout: 60_000});
    await page.locator("[data-testid=slot][data-busy=true]").first().waitFor({timeout: 5_000});
    await screenshot(page, "playground-server");
    assert.ok(await busyRegions() >= 1);
    await page.keyboard.press("Escape");
    await page.locator("[data-testid=assistant-msg][data-state=stopped]").waitFor({timeout: 5_000});
    const deadline = Date.now() + 5_000;
    while ((await busyRegions()) > 0) {
      assert.ok(Date.now() < deadline, "a region is still busy 5 s after the stop");
      await new Promise((r) => setTimeout(r, 100));
    }
    // The page's own view agrees once its next poll lands.
    await page.getByTestId("busy-count").getByText("0 busy of 4").waitFor({timeout: 5_000});
  });

  test("a JSON schema gets a validated, highlighted reply", async () => {
    await setField("max_tokens", "96");
    await page.getByText("Clear").click();
    await page.getByTestId("schema-on").check();
    await send("Describe Paris as JSON.");
    await finished();
    assert.equal(await lastReply().getByTestId("schema-verdict").innerText(), "valid against the schema");
    const json = lastReply().getByTestId("schema-json");
    assert.ok(await json.locator(".j-key").count() >= 3, "keys are highlighted");
    const parsed = JSON.parse(await json.innerText()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed).sort(), ["city", "country", "population_millions"]);
    await settled();
    await screenshot(page, "playground-schema");
    await page.getByTestId("schema-on").uncheck();
  });

  test("a reply kept under a name is listed as a handle and can be deleted", async () => {
    await setField("max_tokens", "8");
    await setField("keep", "demo");
    await send("Hi.");
    await finished();
    const handle = page.getByTestId("handle").filter({hasText: "demo"});
    await handle.waitFor({timeout: 10_000});
    await handle.getByText("fork").click();
    assert.equal(await page.getByTestId("field-from").inputValue(), "demo");
    assert.equal(await page.getByTestId("field-keep").inputValue(), "demo-fork");
    await handle.getByText("delete").click();
    await handle.waitFor({state: "detached", timeout: 10_000});
    await setField("keep", "");
    await setField("from", "");
  });

  test("a loaded side model's route is offered and answers", async () => {
    const panel = page.getByTestId("side-models");
    assert.match(await panel.getByTestId("side-body").inputValue(), /"model": "nx3-embedding-0.6b"/);
    await panel.getByTestId("side-send").click();
    const result = await panel.getByTestId("side-result").innerText({timeout: 30_000});
    assert.match(result, /"object": "embedding"/);
    assert.match(result, /376 more \(384 in all\)/);
  });

  test("model text is shown as text: HTML and scripts stay inert; reasoning and tool calls are set apart", async () => {
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({id: "x", object: "chat.completion.chunk", created: 0, model: "m", choices: [{index: 0, delta, finish_reason: null}], ...extra})}\n\n`;
    const evil = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>`;
    const body = chunk({reasoning_content: "thinking <i>hard</i>"}) + chunk({content: evil})
      + chunk({tool_calls: [{index: 0, id: "call_1", type: "function", function: {name: "get_weather", arguments: ""}}]})
      + chunk({tool_calls: [{index: 0, function: {arguments: '{"city":"<Paris>"}'}}]})
      + `data: ${JSON.stringify({id: "x", object: "chat.completion.chunk", created: 0, model: "m", choices: [{index: 0, delta: {}, finish_reason: "tool_calls"}],
        timings: {prompt_n: 3, prompt_ms: 1, prompt_per_second: 3000, predicted_n: 9, predicted_ms: 9, predicted_per_second: 1000, cache_n: 1, draft_n: 0, draft_n_accepted: 0}})}\n\n`
      + "data: [DONE]\n\n";
    await page.route("**/v1/chat/completions", (r) => r.fulfill({status: 200, contentType: "text/event-stream", body}));
    try {
      await send("anything");
      await finished();
    } finally {
      await page.unroute("**/v1/chat/completions");
    }
    const reply = lastReply();
    assert.equal(await reply.getByTestId("answer").innerText(), evil);
    assert.equal(await reply.getByTestId("answer").locator("*").count(), 0, "no element was made from the reply");
    assert.equal(await reply.locator("img, script, i").count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as {__pwned?: number}).__pwned), undefined);
    assert.match(await reply.getByTestId("reasoning").textContent() ?? "", /thinking <i>hard<\/i>/);
    const card = reply.getByTestId("tool-call");
    assert.match(await card.innerText(), /get_weather/);
    assert.match(await card.innerText(), /"city": "<Paris>"/);
    assert.match(await reply.getByTestId("cache-share").innerText(), /cache 1 of 4 \(25%\)/);
  });

  test("the page logged no errors", () => {
    assert.deepEqual(errors, []);
  });
});
