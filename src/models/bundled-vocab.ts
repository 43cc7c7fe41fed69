// A tokenizer file from the llama.cpp source that node-llama-cpp ships (its gitRelease.bundle): llama.cpp keeps
// vocabulary-only GGUFs of common tokenizers in models/ for its own tests. The image model needs Qwen3's tokenizer to
// cut a prompt at 512 tokens, and a FLUX.2 text encoder shipped as safetensors carries none; Qwen3's is Qwen2's
// (ggml-vocab-qwen2.gguf), so that file serves. It is taken out of the bundle once (about 2 s with git) into the
// models cache and reused.

import {execFile} from "node:child_process";
import {mkdir, mkdtemp, rename, rm, stat, writeFile} from "node:fs/promises";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {promisify} from "node:util";

const run = promisify(execFile);
const BUNDLE = fileURLToPath(new URL("../../node_modules/node-llama-cpp/llama/gitRelease.bundle", import.meta.url));

/** `models/<name>` from the bundled llama.cpp source, cached as `<modelsDir>/<name>`; its path. */
export async function bundledVocab(name: string, modelsDir: string): Promise<string> {
  return (await bundledVocabFiles([name], modelsDir))[0]!;
}

/** Several files of `models/` (a vocabulary and llama.cpp's test vectors for it), taken out in one pass. */
export async function bundledVocabFiles(names: readonly string[], modelsDir: string): Promise<string[]> {
  const paths = names.map((n) => join(modelsDir, n));
  const missing: string[] = [];
  for (const [i, p] of paths.entries()) if (!(await stat(p).catch(() => null))?.isFile()) missing.push(names[i]!);
  if (missing.length === 0) return paths;
  await mkdir(modelsDir, {recursive: true});
  const tmp = await mkdtemp(join(modelsDir, ".vocab-"));
  try {
    const git = join(tmp, "git");
    await run("git", ["init", "--quiet", "--bare", git]);
    await run("git", ["-C", git, "fetch", "--quiet", BUNDLE, "HEAD"], {maxBuffer: 64 * 1024 * 1024});
    for (const name of missing) {
      const {stdout} = await run("git", ["-C", git, "show", `FETCH_HEAD:models/${name}`], {encoding: "buffer", maxBuffer: 256 * 1024 * 1024});
      await writeFile(join(tmp, name), stdout);
      // Renamed into place whole: another process reading the cache never sees half a file.
      await rename(join(tmp, name), join(modelsDir, name));
    }
    return paths;
  } catch (e) {
    const err = e as NodeJS.ErrnoException & {stderr?: Buffer | string};
    const why = err.code === "ENOENT" ? "git is not installed (Debian: apt-get install git)" : String(err.stderr ?? err.message).trim().slice(-500);
    throw new Error(`could not take models/${missing.join(", ")} out of node-llama-cpp's bundled llama.cpp source (${BUNDLE}): ${why}`);
  } finally {
    await rm(tmp, {recursive: true, force: true});
  }
}
