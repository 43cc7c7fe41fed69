// GET / (the playground page) and its assets under /playground/. The page is plain ESM run by the browser as
// shipped: no build step. Its UI library (preact, its hooks, htm) is served from node_modules as installed, so
// the versions are the lock file's and nothing is copied by hand; an import map in the page names them.
// These paths are open without the API key (auth.ts): they are static, carry no server state, and the page
// has to load before it can ask for the key.

import {createHash} from "node:crypto";
import {readFileSync, readdirSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import type {FastifyInstance} from "fastify";
import {ApiError} from "../../core/errors.ts";

export const PLAYGROUND_PREFIX = "/playground/";

const STATIC_DIR = fileURLToPath(new URL("./static/", import.meta.url));
const require = createRequire(import.meta.url);

/** The ESM builds, found next to each package's CommonJS entry (its `exports` hide the dist paths). */
const VENDOR: Record<string, string> = {
  "preact.mjs": join(dirname(require.resolve("preact")), "preact.module.js"),
  "hooks.mjs": join(dirname(require.resolve("preact/hooks")), "hooks.module.js"),
  "htm.mjs": join(dirname(require.resolve("htm")), "htm.module.js"),
};

const IMPORT_MAP = JSON.stringify({imports: {
  "preact": `${PLAYGROUND_PREFIX}vendor/preact.mjs`,
  "preact/hooks": `${PLAYGROUND_PREFIX}vendor/hooks.mjs`,
  "htm": `${PLAYGROUND_PREFIX}vendor/htm.mjs`,
}});

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
};

const OTHER = "application/octet-stream";

function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf("."))] ?? OTHER;
}

/**
 * Model text is untrusted: the page renders it through Preact (escaped), and the policy is a second wall. The
 * one inline script, the import map, is allowed by its hash, so no inline script of anything else can run.
 */
function policy(): string {
  const hash = createHash("sha256").update(IMPORT_MAP, "utf8").digest("base64");
  return [`default-src 'self'`, `script-src 'self' 'sha256-${hash}'`, `style-src 'self'`, `img-src 'self' data:`,
    `connect-src 'self'`, `object-src 'none'`, `base-uri 'none'`, `frame-ancestors 'none'`].join("; ");
}

export function registerPlaygroundRoutes(app: FastifyInstance): void {
  // Read once at start: a missing asset fails the start, not a visitor's page load.
  const assets = new Map<string, Buffer>();
  // Only what the browser runs: the .d.ts files beside the scripts are for the unit tests' type check.
  for (const name of readdirSync(STATIC_DIR)) {
    if (name !== "index.html" && typeOf(name) !== OTHER) assets.set(name, readFileSync(join(STATIC_DIR, name)));
  }
  for (const [name, path] of Object.entries(VENDOR)) assets.set(`vendor/${name}`, readFileSync(path));
  const page = readFileSync(join(STATIC_DIR, "index.html"), "utf8").replace("<!--IMPORT_MAP-->",
    `<script type="importmap">${IMPORT_MAP}</script>`);
  const csp = policy();

  app.get("/", async (_req, reply) => {
    reply.header("content-type", TYPES[".html"]).header("content-security-policy", csp).header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff");
    return page;
  });

  app.get<{Params: {"*": string}}>(`${PLAYGROUND_PREFIX}*`, async (req, reply) => {
    const name = req.params["*"];
    const body = assets.get(name);
    if (!body) throw new ApiError("not_found", `no playground asset ${name}`);
    reply.header("content-type", typeOf(name)).header("cache-control", "no-cache").header("x-content-type-options", "nosniff");
    return body;
  });
}
