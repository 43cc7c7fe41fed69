// The links between README.md and docs/*.md resolve: every relative link names a file that exists, and every anchor
// names a heading of its page, spelled as GitHub spells heading anchors (scripts/doc-links.ts).

import assert from "node:assert/strict";
import {fileURLToPath} from "node:url";
import {test} from "node:test";
import {anchorOf, anchorsOf, checkDocLinks} from "../../../scripts/doc-links.ts";

test("heading anchors are spelled as GitHub spells them", () => {
  assert.equal(anchorOf("Remote engines (`SVC_ENGINE`)"), "remote-engines-svc_engine");
  assert.equal(anchorOf("Messages-style route (`POST /v1/messages`, Anthropic)"), "messages-style-route-post-v1messages-anthropic");
  assert.equal(anchorOf("Coding agents: `SVC_FORK_MAP=coding-agent`"), "coding-agents-svc_fork_mapcoding-agent");
  assert.deepEqual([...anchorsOf("# A\n\n```\n# not a heading\n```\n## A\n### B: c\n")], ["a", "a-1", "b-c"]);
});

test("every internal link and anchor in README.md and docs/*.md resolves", () => {
  const {pages, links, broken} = checkDocLinks(fileURLToPath(new URL("../../..", import.meta.url)));
  assert.ok(pages >= 9, `README.md and the docs pages (found ${pages})`);
  assert.ok(links > 0, "the pages link to each other");
  assert.deepEqual(broken.map((b) => `${b.page}:${b.line}: ${b.target}: ${b.why}`), []);
});
