// `npm ci` (the README's install command) refuses a lock file that lacks any optional dependency, and
// `npm install` drops node-llama-cpp's platform packages that the registry does not serve at the pinned
// version. scripts/complete-lock.mjs puts them back; this test fails if a regenerated lock lost them.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";

test("package-lock.json has an entry for every optional platform package of node-llama-cpp", () => {
  const lock = JSON.parse(readFileSync(new URL("../../../package-lock.json", import.meta.url), "utf8"));
  const nlc = lock.packages["node_modules/node-llama-cpp"];
  assert.equal(nlc.version, "3.22.1");
  const missing = Object.keys(nlc.optionalDependencies).filter((name) => !lock.packages[`node_modules/${name}`]);
  assert.deepEqual(missing, [], "run `node scripts/complete-lock.mjs` after `npm install`");
});
