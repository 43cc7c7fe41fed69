// SVC_NPU_DEC_RESUME=2: texts whose KV is kept for later requests, up to SVC_NPU_DEC_ENTRIES (least
// recently used replaced first). The scorer has one context with one sequence, so a kept text is the
// sequence's state saved to a file in host memory (/dev/shm when there is one) and loaded back when a later
// text extends it. A saved state is a byte copy of the KV cells, so a restored prefix gives the very numbers
// a cold evaluation gives (the prompt's cut plan makes sure of that; see lm/scorer.ts).
//
// Measured on SmolLM2-135M Q4_1, 2 cores (log line "decision … keep_ms kept_bytes"): a saved state takes
// about 20 KB per token (a 104-token prompt 1.96 MB, a ~370-token one 8 MB), and saving it took 8 and 25 ms
// on a loaded machine, where evaluating the same prompts took 40 and 60 s (about 0.3 to 1 s when idle).

import {mkdtempSync, rmSync, existsSync} from "node:fs";
import {rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {commonPrefix} from "../../engine/index.ts";
import type {HeldState, LmScorer} from "../lm/scorer.ts";

interface KeptText {
  key: string;
  file: string;
  state: HeldState;
  bytes: number;
}

export interface KeptTextsStatus {
  entries: number;
  bytes: number;
  restores: number;
  saves: number;
}

/** How many texts seen once are remembered (by hash only) to notice their second appearance. */
const SEEN_ONCE_LIMIT = 1024;

export class KeptTexts {
  private readonly entries = new Map<string, KeptText>();
  private readonly seenOnce = new Set<string>();
  private dir: string | null = null;
  private counter = 0;
  private restores = 0;
  private saves = 0;

  /**
   * Before the first question: when a kept text shares more of the prompt than the KV the scorer holds now,
   * load it. Inside the executor pass. Returns the key of the entry loaded, or null.
   */
  async restoreBest(scorer: LmScorer, prompt: readonly number[]): Promise<string | null> {
    const live = commonPrefix(scorer.held().tokens, prompt);
    let best: KeptText | null = null;
    let bestCommon = live;
    for (const e of this.entries.values()) {
      const c = commonPrefix(e.state.tokens, prompt);
      if (c > bestCommon) {
        best = e;
        bestCommon = c;
      }
    }
    if (!best) return null;
    await scorer.restoreNow(best.file, best.state);
    this.touch(best);
    this.restores++;
    return best.key;
  }

  /**
   * After the last question of a request: should its text be kept? A request with several questions keeps
   * it at once; a text sent with a single question is kept from its second appearance on.
   */
  shouldKeep(key: string, questions: number): boolean {
    if (questions > 1 || this.entries.has(key)) return true;
    if (this.seenOnce.has(key)) return true;
    this.seenOnce.add(key);
    if (this.seenOnce.size > SEEN_ONCE_LIMIT) this.seenOnce.delete(this.seenOnce.values().next().value!);
    return false;
  }

  /** Saves what the scorer holds now under the text's key (inside the executor pass). */
  async keep(scorer: LmScorer, key: string, limit: number): Promise<void> {
    const old = this.entries.get(key);
    const file = join(this.directory(), `text-${++this.counter}.ggsq`);
    const saved = await scorer.saveNow(file);
    if (old) {
      this.entries.delete(key);
      await rm(old.file, {force: true});
    }
    this.seenOnce.delete(key);
    this.entries.set(key, {key, file, state: {tokens: saved.tokens, cuts: saved.cuts}, bytes: saved.bytes});
    this.saves++;
    while (this.entries.size > limit) {
      const [oldestKey, oldest] = this.entries.entries().next().value!;
      this.entries.delete(oldestKey);
      await rm(oldest.file, {force: true});
    }
  }

  status(): KeptTextsStatus {
    let bytes = 0;
    for (const e of this.entries.values()) bytes += e.bytes;
    return {entries: this.entries.size, bytes, restores: this.restores, saves: this.saves};
  }

  close(): void {
    if (this.dir) rmSync(this.dir, {recursive: true, force: true});
    this.dir = null;
    this.entries.clear();
  }

  private touch(e: KeptText): void {
    this.entries.delete(e.key);
    this.entries.set(e.key, e);
  }

  private directory(): string {
    if (!this.dir) {
      // Host memory when the system has a RAM-backed tmpfs; the spec's entries hold host memory until replaced.
      const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
      this.dir = mkdtempSync(join(base, "svc-decider-"));
    }
    return this.dir;
  }
}
