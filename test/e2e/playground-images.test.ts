// The playground's image form in headless Chromium, against a server with the test image model
// (support/test-image-model.ts) and one without: the form is offered only where /health lists an image model;
// two pictures drawn at 256x256 with a seed come back as PNG data URLs of that size with the seed of each and the
// time taken; a seed the server refuses shows the server's message. An attached picture sends a multipart edit (or a
// variation without a prompt), checked only up to the server's refusal of the seed: drawing one takes about 40 s on
// the test weights, and test/e2e/images.test.ts draws them.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type {Browser, Page} from "playwright-core";
import sharp from "sharp";
import {sharedServer} from "../../support/server-pool.ts";
import {startServer, type OwnServer, type RunningServer} from "../../support/server.ts";
import {testImageModelDir} from "../../support/test-image-model.ts";
import {collectErrors, launch, screenshot} from "./browser.ts";

const MODEL = "nximg2-klein-4b";

let withImages: OwnServer;
let plain: RunningServer;
let browser: Browser;
let page: Page;
let errors: string[];

before(async () => {
  [withImages, plain, browser] = await Promise.all([
    testImageModelDir().then((dir) => startServer({SVC_NPU_MODELS: `${MODEL}=${dir}`}, 600_000)),
    sharedServer({}),
    launch(),
  ]);
  page = await browser.newPage({viewport: {width: 1400, height: 860}});
  errors = collectErrors(page);
});
after(async () => {
  await browser?.close();
  await withImages?.stop();
  await plain?.stop();
});

const lastRun = () => page.getByTestId("image-run").first();

async function drawn(timeout = 60_000): Promise<string> {
  await page.locator("[data-testid=image-run]:first-child:not([data-state=drawing])").waitFor({timeout});
  return (await lastRun().getAttribute("data-state"))!;
}

describe("the playground's image form", () => {
  test("with an image model: the Images view shows the form", async () => {
    await page.goto(withImages.url);
    await page.getByTestId("view-images").check();
    await page.getByTestId("image-form").waitFor();
    assert.match(await page.getByTestId("image-form").innerText(), new RegExp(MODEL));
    assert.equal(await page.getByTestId("settings").isVisible(), false, "the chat's settings make way for the form");
  });

  test("two pictures at 256x256 with a seed: PNG data URLs of that size, the seed of each and the time taken", async () => {
    await page.getByTestId("image-prompt").fill("a red cat on a mat");
    await page.getByTestId("image-size").selectOption("256x256");
    await page.getByTestId("image-n").selectOption("2");
    await page.getByTestId("image-seed").fill("11");
    await page.getByTestId("image-draw").click();
    await page.locator("[data-testid=image-run][data-state=drawing]").waitFor({timeout: 5_000});
    assert.equal(await page.getByTestId("image-draw").isDisabled(), true, "no second draw while one is drawing");
    assert.equal(await drawn(), "done", await lastRun().innerText());
    assert.equal(await page.getByTestId("image-draw").isDisabled(), false);
    const pictures = lastRun().getByTestId("drawn-picture");
    assert.equal(await pictures.count(), 2);
    const pngs: Buffer[] = [];
    for (let i = 0; i < 2; i++) {
      const src = (await pictures.nth(i).getAttribute("src"))!;
      assert.match(src, /^data:image\/png;base64,/);
      const png = Buffer.from(src.slice(src.indexOf(",") + 1), "base64");
      const meta = await sharp(png).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ["png", 256, 256]);
      // Shown at its size: the data URL decoded in the page too.
      assert.equal(await pictures.nth(i).evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth), 256);
      pngs.push(png);
    }
    assert.ok(!pngs[0]!.equals(pngs[1]!), "seed and seed + 1 draw different pictures");
    assert.deepEqual(await lastRun().getByTestId("drawn-seed").allInnerTexts(), ["seed 11", "seed 12"]);
    assert.match(await lastRun().getByTestId("image-time").innerText(), /^\d+\.\d s$/);
    await screenshot(page, "playground-images");
  });

  test("a seed the server refuses shows its message, and nothing is drawn", async () => {
    await page.getByTestId("image-seed").fill("-1");
    await page.getByTestId("image-draw").click();
    assert.equal(await drawn(10_000), "error");
    assert.match(await lastRun().getByTestId("image-error").innerText(), /^seed: must be an integer from 0 to 4294967295$/);
    assert.equal(await lastRun().getByTestId("drawn-picture").count(), 0);
    assert.equal(await page.getByTestId("image-run").count(), 2, "the earlier draw stays");
    assert.equal(await page.getByTestId("image-draw").isDisabled(), false);
  });

  test("an attached picture makes it a multipart edit, or a variation without a prompt (refused by seed here, so nothing is drawn)", async () => {
    const png = await sharp({create: {width: 8, height: 8, channels: 3, background: {r: 200, g: 30, b: 30}}}).png().toBuffer();
    await page.getByTestId("image-file").setInputFiles({name: "red.png", mimeType: "image/png", buffer: png});
    await page.getByTestId("image-attached").waitFor();
    assert.deepEqual(await page.getByTestId("image-size").locator("option").evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)),
      ["auto", "512x512"], "edits and variations draw 512x512 only");
    assert.equal(await page.getByTestId("image-size").inputValue(), "auto");
    for (const [kind, prompt] of [["edits", "make it blue"], ["variations", ""]] as const) {
      await page.getByTestId("image-prompt").fill(prompt);
      const sent = page.waitForRequest((r) => r.url().endsWith(`/v1/images/${kind}`));
      await page.getByTestId("image-draw").click();
      const req = await sent;
      assert.match(req.headers()["content-type"] ?? "", /^multipart\/form-data; boundary=/);
      assert.equal(await drawn(10_000), "error");
      // The server read the multipart form (a JSON body would be refused as "body: ...") and then the seed.
      assert.equal(await lastRun().getByTestId("image-error").innerText(), "seed: must be an integer from 0 to 4294967295");
      assert.match(await lastRun().innerText(), kind === "edits" ? /^edit · auto/ : /^variation · auto/);
    }
    await page.getByTestId("image-attached").locator("xpath=..").getByTitle("remove").click();
    assert.equal(await page.getByTestId("image-size").locator("option").count(), 1 + 20, "auto and the generation sizes again");
  });

  test("back in the Chat view the chat is shown and the form is not", async () => {
    await page.getByTestId("view-chat").check();
    await page.getByTestId("composer").waitFor();
    assert.equal(await page.getByTestId("image-form").isVisible(), false);
  });

  test("without an image model neither the Images view nor the form is offered", async () => {
    const other = await browser.newPage();
    const otherErrors = collectErrors(other);
    try {
      await other.goto(plain.url);
      // The model name shows once the page has read /health and /v1/models.
      await other.getByTestId("model").getByText(/\S/).waitFor();
      await other.getByTestId("composer").waitFor();
      assert.equal(await other.getByTestId("view-images").count(), 0);
      assert.equal(await other.getByTestId("image-form").count(), 0);
      assert.deepEqual(otherErrors, []);
    } finally {
      await other.close();
    }
  });

  test("the page logged no errors but the refused draws' 400s", () => {
    // Chromium logs a fetch answered 400 as a failed resource; the three refusals above are those.
    const refused = errors.filter((e) => /status of 400/.test(e));
    assert.equal(refused.length, 3, errors.join("\n"));
    assert.deepEqual(errors.filter((e) => !refused.includes(e)), []);
  });
});
