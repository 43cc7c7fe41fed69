// Images: POST /v1/images/generations (nximg2-klein-4b: stable-diffusion.cpp in its Python worker) on the generated
// FLUX.2 klein-shaped test weights, and what drawing does to the main model's decode beside it.
//
//   npm run bench:images        (BENCH_QUICK=1 for fewer rounds)
//
// Measured, all in one run on the same machine, interleaved round by round:
//   1. seconds per picture at 256x256, 512x512 and 1024x1024 through svc (client wall, PNG out), against the same
//      engine driven directly in Python with the same files, threads and settings (the library column: svc's cost
//      around the engine is the difference: the queue, the IPC, the PNG re-encode, base64);
//   2. the main model's decode (a streamed chat, max_tokens 128, greedy; the server's timings) alone, and while
//      pictures are drawn back to back beside it; and llama-server's decode alone on the same GGUF and threads (the
//      anchor). The worker runs at a lower priority (nice 10) with one thread, so the main model keeps its cores.
// The test weights are tiny (a 2 MB transformer): the figures are svc's overhead and the sharing of cores, not what a
// real klein-4B costs (the README says what that needs).

import {execFile} from "node:child_process";
import {mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {availableParallelism, tmpdir} from "node:os";
import {join} from "node:path";
import {promisify} from "node:util";
import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {freePort} from "../support/llama-replicas.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../support/llama-server/servers.ts";
import {TEST_IMAGE_MODEL_FILES, testImageModelDir} from "../support/test-image-model.ts";
import {DEFAULT_MAIN_MODEL_SPEC, defaultModelsDir, resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {imagePython} from "../src/side-models/images/python-env.ts";
import {median, streamChat} from "./llama-server/client.ts";

const QUICK = process.env.BENCH_QUICK === "1";
const ROUNDS = QUICK ? 2 : 5;
const SIZES = ["256x256", "512x512", "1024x1024"] as const;
const say = (line: string) => process.stderr.write(`${line}\n`);
const run = promisify(execFile);

const CHAT = {model: "m", messages: [{role: "user", content: "Write a long story about a lighthouse keeper and the sea."}],
  max_tokens: 128, temperature: 0, stream: true as const};

/** The engine alone: the same files, one thread, flash attention, 4 steps, its PNG written, timed inside Python per picture. */
const ENGINE_ALONE = `
import sys, time, json
from inferna.sd import stable_diffusion as sd
d = sys.argv[1]
p = sd.SDContextParams(diffusion_model_path=d + "/${TEST_IMAGE_MODEL_FILES.diffusionModel}", vae_path=d + "/${TEST_IMAGE_MODEL_FILES.vae}", n_threads=1)
p.llm_path = d + "/${TEST_IMAGE_MODEL_FILES.textEncoder}"
p.diffusion_flash_attn = True
p.flash_attn = True
ctx = sd.SDContext(p)
out = {}
for size in sys.argv[4:]:
    w, h = map(int, size.split("x"))
    times = []
    for r in range(int(sys.argv[3]) + 1):
        t = time.monotonic()
        img = ctx.generate_with_params(sd.SDImageGenParams(prompt="a lighthouse at dusk", width=w, height=h, seed=r, sample_steps=4, cfg_scale=1.0))[0]
        img.save_png(sys.argv[2] + "/alone.png")
        times.append(time.monotonic() - t)
    out[size] = times[1:]
print(json.dumps(out))
`;

async function draw(svc: Server, size: string, seed: number): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${svc.url}/v1/images/generations`, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({prompt: "a lighthouse at dusk", size, seed})});
  if (!res.ok) throw new Error(`images: HTTP ${res.status} ${await res.text()}`);
  await res.json();
  return (performance.now() - started) / 1000;
}

async function decodeTps(server: Server): Promise<number> {
  const s = await streamChat(server.url, CHAT);
  return s.n > 1 && s.last > s.first ? ((s.n - 1) * 1000) / (s.last - s.first) : NaN;
}

async function main(): Promise<void> {
  const build = ensureLlamaServer({log: (l) => say(`llama-server build: ${l}`)});
  const logger = createLogger("warn");
  const gguf = (await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: defaultModelsDir(), logger, progress: "lines"})).path;
  const dir = await testImageModelDir();
  const python = await imagePython({modelsDir: defaultModelsDir(), logger});
  const shape: Shape = {gguf, threads: availableParallelism(), regions: 1, ctxPerRegion: 4096};
  const svc = await startSvc(shape, await freePort(), {SVC_NPU_MODELS: `nximg2-klein-4b=${dir}`});
  const llama = await startLlamaServer(build.binary, shape, await freePort());
  const scratch = mkdtempSync(join(tmpdir(), "svc-bench-images-"));
  const script = join(scratch, "engine.py");
  writeFileSync(script, ENGINE_ALONE);
  const viaSvc = new Map<string, number[]>(SIZES.map((s) => [s, []]));
  const alone = new Map<string, number[]>(SIZES.map((s) => [s, []]));
  const tps = {svc: [] as number[], svcDrawing: [] as number[], llama: [] as number[]};
  try {
    await draw(svc, "256x256", 0);
    await decodeTps(svc);
    await decodeTps(llama);
    for (let round = 0; round < ROUNDS; round++) {
      // 1. pictures through svc, then the engine alone (one picture per size per round, after a warm-up draw).
      for (const size of SIZES) viaSvc.get(size)!.push(await draw(svc, size, round));
      const {stdout} = await run(python, [script, dir, scratch, "1", ...SIZES], {maxBuffer: 1 << 20});
      for (const [size, times] of Object.entries(JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, number[]>)) {
        alone.get(size)!.push(...times);
      }
      // 2. decode alone on both servers, then svc's decode while 512x512 pictures are drawn back to back.
      const order = round % 2 === 0 ? [svc, llama] : [llama, svc];
      for (const s of order) (s === svc ? tps.svc : tps.llama).push(await decodeTps(s));
      let drawing = true;
      const loop = (async () => {
        let seed = 100 + round * 50;
        while (drawing) await draw(svc, "512x512", seed++);
      })();
      await new Promise((r) => setTimeout(r, 300));
      tps.svcDrawing.push(await decodeTps(svc));
      drawing = false;
      await loop;
      say(`round ${round + 1}/${ROUNDS}: svc ${SIZES.map((s) => viaSvc.get(s)!.at(-1)!.toFixed(2)).join("/")} s, alone ` +
        `${SIZES.map((s) => alone.get(s)!.at(-1)!.toFixed(2)).join("/")} s; decode svc ${tps.svc.at(-1)!.toFixed(1)}, drawing ` +
        `${tps.svcDrawing.at(-1)!.toFixed(1)}, llama-server ${tps.llama.at(-1)!.toFixed(1)} tok/s`);
    }
  } finally {
    await Promise.all([svc.stop(), llama.stop()]);
    rmSync(scratch, {recursive: true, force: true});
  }
  const f = (x: number, d = 2) => x.toFixed(d);
  console.log(`\nimages: generated FLUX.2 klein-shaped test weights, 4 steps, worker 1 thread (nice 10); main model SmolLM2-135M, ` +
    `${shape.threads} threads; ${ROUNDS} rounds interleaved; medians`);
  console.log("| size | svc s/picture | engine alone s/picture | engine / svc |");
  console.log("|---|---|---|---|");
  for (const size of SIZES) {
    const a = median(viaSvc.get(size)!);
    const b = median(alone.get(size)!);
    console.log(`| ${size} | ${f(a)} | ${f(b)} | ${f(b / a)} |`);
  }
  const [s, d, l] = [median(tps.svc), median(tps.svcDrawing), median(tps.llama)];
  console.log("\n| main decode (tok/s) | svc alone | svc while drawing 512x512 | llama-server alone | drawing / alone | svc / llama-server |");
  console.log("|---|---|---|---|---|---|");
  console.log(`| 128 tokens, greedy | ${f(s, 1)} | ${f(d, 1)} | ${f(l, 1)} | ${f(d / s)} | ${f(s / l)} |`);
}

await main();
