// The messages of the preflight's probe call, the same for every adapter that checks its
// constraint before hour 0 (openai, gemini).

/** What the preflight probe asks. The schema is NOT shown: only the constraint can make the answer valid, so a capable model cannot mask a server that ignores it. */
export const PROBE_MESSAGES = {
  system: 'You are checked before a study starts.',
  user: 'Reply with one JSON object and nothing else.',
} as const;
