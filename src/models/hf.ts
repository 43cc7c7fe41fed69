// Downloads one file from a Hugging Face style "resolve" endpoint. Redirects are followed by hand because
// the hub sends the LFS sha256 (x-linked-etag) on the redirect, not on the storage response behind it,
// and because the token must not travel to another origin.

import {FetchFailure, normalizeSha, writeAtomically, type Expectation, type ProgressContext} from "./cache.ts";

export interface HfDownloadOptions extends ProgressContext {
  url: string;
  target: string;
  source: string;
  token: string | undefined;
  expect: Expectation[];
  signal?: AbortSignal;
}

const MAX_REDIRECTS = 8;

export async function downloadHf(opts: HfDownloadOptions): Promise<{sha256: string; size: number}> {
  const origin = new URL(opts.url).origin;
  let current = opts.url;
  let linkedSha: string | null = null;
  let linkedSize: number | null = null;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    // identity: with a compressed transfer, Content-Length would not be the file size we check against.
    const headers: Record<string, string> = {"accept-encoding": "identity"};
    if (opts.token && new URL(current).origin === origin) headers.authorization = `Bearer ${opts.token}`;
    let res: Response;
    try {
      res = await fetch(current, {headers, redirect: "manual", signal: opts.signal});
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      throw new FetchFailure(`request failed: ${describeFetchError(e)}`);
    }
    const le = res.headers.get("x-linked-etag");
    if (le) linkedSha = normalizeSha(le) ?? linkedSha;
    const ls = Number(res.headers.get("x-linked-size") ?? NaN);
    if (Number.isFinite(ls)) linkedSize = ls;

    if (res.status >= 300 && res.status < 400 && res.status !== 304) {
      await res.body?.cancel();
      const loc = res.headers.get("location");
      if (!loc) throw new FetchFailure(`HTTP ${res.status} without a Location header`);
      current = new URL(loc, current).href;
      continue;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new FetchFailure(httpReason(res.status, current !== opts.url));
    }
    const length = Number(res.headers.get("content-length") ?? NaN);
    const total = Number.isFinite(length) ? length : linkedSize;
    const expect = [...opts.expect];
    if (linkedSha) expect.push({sha256: linkedSha, from: "x-linked-etag"});
    const body = res.body as unknown as AsyncIterable<Uint8Array>;
    try {
      return await writeAtomically(opts.target, body, {
        source: opts.source, expect, total, label: `download ${opts.source}`,
        logger: opts.logger, progress: opts.progress,
      });
    } catch (e) {
      if (e instanceof FetchFailure || opts.signal?.aborted) throw e;
      throw new FetchFailure(`transfer failed: ${describeFetchError(e)}`);
    }
  }
  throw new FetchFailure(`more than ${MAX_REDIRECTS} redirects`);
}

function httpReason(status: number, redirected: boolean): string {
  const where = redirected ? " (after a redirect)" : "";
  if (status === 401 || status === 403) {
    return `HTTP ${status}${where}: access denied; the repo may be gated or private, set HF_TOKEN`;
  }
  if (status === 404) return `HTTP 404${where}: no such repo, revision or file`;
  return `HTTP ${status}${where}`;
}

// undici reports network trouble as "fetch failed" / "terminated" with the useful part in `cause`.
function describeFetchError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = (e as Error & {cause?: unknown}).cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return `${e.message} (${code ? `${code}: ` : ""}${cause.message})`;
  }
  return e.message;
}
