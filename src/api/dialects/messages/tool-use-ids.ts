// Call ids in Anthropic's spelling and back. The pipeline names the calls a reply makes `call_…` (and remembers the
// argument text of each by that id, src/pipeline/past-calls.ts); this route shows them as `toolu_…`. A client sends
// them back as it got them, so decoding undoes the spelling: without it the server would not know the calls as its
// own, would re-serialize them, and the follow-up's prompt would leave the kept state where the call starts.
// Ids of any other form (another server's) pass through unchanged.

const OURS = "call_";
const ANTHROPIC = "toolu_";

/** A call id as the Messages route shows it. */
export function toolUseId(callId: string): string {
  return `${ANTHROPIC}${callId.startsWith(OURS) ? callId.slice(OURS.length) : callId}`;
}

/** The call id a `toolu_…` id a client sent back stands for (the inverse of toolUseId). */
export function callIdOf(toolUseId: string): string {
  return toolUseId.startsWith(ANTHROPIC) ? `${OURS}${toolUseId.slice(ANTHROPIC.length)}` : toolUseId;
}
