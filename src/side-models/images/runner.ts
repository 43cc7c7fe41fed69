// The image side model (`nximg2-klein-4b`): FLUX.2 klein in stable-diffusion.cpp, in a Python worker of its own
// (image-engine.ts, image-worker.py). No registry ships its weights, so the id names a folder of them
// (`nximg2-klein-4b=<dir>`, model-parts.ts). Each picture is one pass of the side executor: the spec's one pass at a
// time, its queue rules (SVC_NPU_QUEUE, SVC_QUEUE_TIMEOUT) and its pacing beside the main model; the `n` pictures of
// a request are drawn one after another, the later ones as the continuation of work under way.

import {randomInt} from "node:crypto";
import {EngineCancelledError} from "../../engine/index.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {ImageEngine, type DrawJob} from "./image-engine.ts";
import {findImageParts, type ImageParts} from "./model-parts.ts";
import {ImagePromptWriter, type ImagePrompt} from "./prompt.ts";
import {imagePython} from "./python-env.ts";

/** FLUX.2 klein is distilled to 4 steps; the spec allows no other count. */
export const IMAGE_STEPS = 4;
/** The seeds a request may give (an unsigned 32-bit integer, as most image APIs take); seed + i stays an int64. */
export const MAX_SEED = 2 ** 32 - 1;

export interface DrawRequest {
  prompt: string;
  width: number;
  height: number;
  n: number;
  /** Picture i is drawn at seed + i; null draws a seed for the request. */
  seed: number | null;
  /** An edit's or variation's picture (its reference): PNG at width x height. */
  init: Buffer | null;
  signal?: AbortSignal;
}

export interface Drawn {
  pngs: Buffer[];
  seed: number;
  prompt: ImagePrompt;
}

export class ImageRunner implements SideRunner {
  readonly kind = "image" as const;

  private constructor(readonly id: string, readonly path: string, private readonly parts: ImageParts & {found: string[]},
    private readonly engine: ImageEngine, private readonly prompts: ImagePromptWriter, private readonly ctx: SideModelContext) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<ImageRunner> {
    const parts = await findImageParts(def.id, def.source);
    const python = await imagePython({modelsDir: ctx.modelsDir, logger: ctx.logger, env: {...process.env,
      ...(ctx.images.python ? {SVC_PYTHON: ctx.images.python} : {})}});
    const prompts = await ImagePromptWriter.load(ctx.modelsDir);
    const engine = new ImageEngine({id: def.id, python, parts, threads: ctx.images.threads, refSide: ctx.images.refSide, logger: ctx.logger,
      children: ctx.children, waitMs: ctx.queueTimeoutMs});
    await engine.start();
    return new ImageRunner(def.id, def.source, parts, engine, prompts, ctx);
  }

  describe(): Record<string, unknown> {
    return {
      engine: "stable-diffusion.cpp (inferna) in a Python worker",
      model: this.engine.modelVersion,
      folder: this.path,
      files: this.parts.found,
      threads: this.ctx.images.threads,
      reference_side: this.ctx.images.refSide,
      steps: IMAGE_STEPS,
    };
  }

  /** The side, in pixels, an edit's or variation's picture of `side` is encoded at. */
  referenceSide(side: number): number {
    return Math.min(side, this.ctx.images.refSide);
  }

  /** Counts and cuts the prompt (prompt.ts). */
  writePrompt(prompt: string): ImagePrompt {
    return this.prompts.write(prompt);
  }

  /** The request's pictures, one executor pass each, as PNGs in order. */
  async draw(req: DrawRequest): Promise<Drawn> {
    const prompt = this.prompts.write(req.prompt);
    const seed = req.seed ?? randomInt(0, 2 ** 31);
    const pngs: Buffer[] = [];
    // A generation is one executor pass per picture, so other side models' passes interleave; an edit or variation is
    // one pass for all of them, so the reference picture is encoded once (stable-diffusion.cpp draws picture i of a
    // batch at seed + i, the same picture a pass of its own at that seed gives).
    const passes = req.init ? [{first: 0, count: req.n}] : Array.from({length: req.n}, (_, i) => ({first: i, count: 1}));
    try {
      for (const [k, pass] of passes.entries()) {
        // A restarting engine is waited for here, before the executor, so other side models' passes are not held behind it.
        await this.engine.whenReady(req.signal);
        const job: DrawJob = {prompt: prompt.text, width: req.width, height: req.height, seed: seed + pass.first, count: pass.count,
          steps: IMAGE_STEPS, init: req.init};
        pngs.push(...await this.ctx.executor.run(() => this.engine.draw(job, req.signal), req.signal, {unbounded: k > 0}));
      }
    } catch (err) {
      // A hang-up while waiting (for the executor, or a restart) is a cancellation too, not a server error.
      if (req.signal?.aborted && !(err instanceof EngineCancelledError)) throw new EngineCancelledError("the client hung up; the pictures were cancelled");
      throw err;
    }
    return {pngs, seed, prompt};
  }

  async close(): Promise<void> {
    await this.engine.close();
  }
}

export const createImageRunner = (def: SideModelDef, ctx: SideModelContext): Promise<ImageRunner> => ImageRunner.load(def, ctx);
