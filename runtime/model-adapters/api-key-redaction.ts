// The API key is sent in one header, to the configured server, and nowhere else: every detail,
// preflight line, fact and answer text an HTTP model adapter returns passes through here first,
// because a server may echo the header back and outcomes go into the event store (issue 15,
// issue 36 item 1). One redactor, shared by the openai and anthropic adapters.

/** What stands where the key was. */
export const REDACTED_API_KEY = '[redacted API key]';

export class ApiKeyRedactor {
  constructor(private readonly apiKey: string | null) {}

  redact(text: string): string {
    return this.apiKey === null ? text : text.split(this.apiKey).join(REDACTED_API_KEY);
  }

  redactNullable(text: string | null): string | null {
    return text === null ? null : this.redact(text);
  }

  redactFacts(facts: Readonly<Record<string, string | number | boolean | null>>): Record<string, string | number | boolean | null> {
    return Object.fromEntries(Object.entries(facts).map(([k, v]) => [k, typeof v === 'string' ? this.redact(v) : v]));
  }
}
