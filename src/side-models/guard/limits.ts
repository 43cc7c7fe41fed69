// The streaming guard's fixed limits (spec, "Streaming guard" and Limits) and the user-message window.

export const GUARD_LIMITS = {
  /** Tokens of user message plus reply the guard reads; then it stops watching. */
  windowTokens: 2048,
  /** Tokens of the user's last message the guard reads (start and end kept when longer). */
  userTokens: 1024,
  chunkMin: 4,
  chunkMax: 128,
  chunkDefault: 16,
} as const;

/**
 * The user's message as the guard reads it: whole when it fits, else its first and last halves of the
 * window. The start usually says what is asked and the end what is to be done with it, so both are kept
 * rather than only the start.
 */
export function userWindow(tokens: readonly number[], max: number = GUARD_LIMITS.userTokens): number[] {
  if (tokens.length <= max) return [...tokens];
  const head = Math.ceil(max / 2);
  const tail = max - head;
  return [...tokens.slice(0, head), ...(tail > 0 ? tokens.slice(tokens.length - tail) : [])];
}
