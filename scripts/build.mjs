// `npm run build`: compiles src/ to dist/ (tsconfig.build.json) and copies the files that are not TypeScript (the
// playground's static page) beside them, so dist/ runs on plain Node: `node dist/main.js`. dist/ is written anew
// each time, so a file removed from src/ does not live on in it. `--out DIR` writes another folder beside it (one
// level below the package root, as dist/ is, so the code's paths to the root hold): the test runner's own build,
// which an `npm run build` or `npx svc` during the run does not touch.
import {spawnSync} from "node:child_process";
import {cpSync, readdirSync, rmSync, statSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join, relative} from "node:path";
import {fileURLToPath} from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const outAt = process.argv.indexOf("--out");
const dist = join(root, outAt >= 0 ? process.argv[outAt + 1] : "dist");
if (dirname(dist) !== root) {
  process.stderr.write(`svc: --out must name a folder directly in the package root (got ${dist})\n`);
  process.exit(2);
}

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  // `npm ci --omit=dev` runs `prepare` without the compiler: say what to do instead of failing the install.
  process.stderr.write("svc: typescript is not installed (an install without dev dependencies), so dist/ is not built; " +
    "install with `npm ci`, or run the server from source: `node --import tsx src/main.ts`\n");
  process.exit(process.argv.includes("--prepare") ? 0 : 1);
}
rmSync(dist, {recursive: true, force: true});
const run = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist], {stdio: "inherit"});
if (run.status !== 0) {
  process.stderr.write("svc: the build failed (the TypeScript errors are above); the server in dist/ was not written\n");
  process.exit(run.status ?? 1);
}

function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) copyAssets(path);
    else if (!name.endsWith(".ts")) cpSync(path, join(dist, relative(src, path)));
  }
}
copyAssets(src);
