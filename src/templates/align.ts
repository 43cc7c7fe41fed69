// Character alignment between the real rendering of a prompt and the marker-located rendering, used
// only when the two differ (templates that trim, split or otherwise rewrite content). Myers' O(ND)
// shortest edit script on the part between the common prefix and suffix: the differences are
// usually a few characters of stripped whitespace, so D stays tiny even for long prompts.

/** Beyond this many edits the middle is left unaligned; callers treat unaligned text as untrusted. */
export const MAX_ALIGN_EDITS = 2000;

/** For each index of `a`, the index of the character of `b` it is matched with, or -1. */
export function alignChars(a: string, b: string, maxEdits = MAX_ALIGN_EDITS): Int32Array {
  const map = new Int32Array(a.length).fill(-1);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) {
    map[pre] = pre;
    pre++;
  }
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) {
    map[a.length - 1 - suf] = b.length - 1 - suf;
    suf++;
  }
  const x0 = pre;
  const y0 = pre;
  const n = a.length - pre - suf;
  const m = b.length - pre - suf;
  if (n === 0 || m === 0) return map;

  const limit = Math.min(maxEdits, n + m);
  const off = limit + 1;
  const v = new Int32Array(2 * limit + 3);
  // trace[d] holds v[-d..d] as it stood after round d, which is all the backtrack needs.
  const trace: Int32Array[] = [];
  for (let d = 0; d <= limit; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x0 + x] === b[y0 + y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        trace.push(v.slice(off - d, off + d + 1));
        backtrack(trace, n, m, (i, j) => { map[x0 + i] = y0 + j; });
        return map;
      }
    }
    trace.push(v.slice(off - d, off + d + 1));
  }
  return map;
}

function backtrack(trace: Int32Array[], n: number, m: number, match: (i: number, j: number) => void): void {
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const k = x - y;
    let startX = 0;
    let prevX = 0;
    let prevY = 0;
    if (d > 0) {
      const prev = trace[d - 1]!;
      const at = (kk: number) => prev[kk + d - 1]!;
      const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
      const prevK = down ? k + 1 : k - 1;
      prevX = at(prevK);
      prevY = prevX - prevK;
      startX = down ? prevX : prevX + 1;
    }
    // The snake: characters matched diagonally after this round's single edit.
    while (x > startX) {
      x--;
      y--;
      match(x, y);
    }
    x = prevX;
    y = prevY;
  }
}
