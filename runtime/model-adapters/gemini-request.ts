// The body of a Gemini generateContent request (issue 36; https://ai.google.dev/api/generate-content):
// the system message as `systemInstruction`, the user message as the one `contents` turn, and
// the answer constrained in the dialect `gemini_json_schema` — `generationConfig.responseMimeType:
// "application/json"` with the answer's JSON Schema as `responseJsonSchema`
// (https://ai.google.dev/gemini-api/docs/structured-output). The same body is sent streamed or
// not; countTokens counts it as `generateContentRequest`, so the count covers what is sent.
import { assertNever } from '../../foundation/assert-never.js';
import type { GeminiDialect } from '../../schema/model-call-policy.js';
import type { ModelParams } from '../model-adapter.js';

/** The request's messages: the system instruction and the user turn. */
export function geminiPromptOf(system: string, user: string): Record<string, unknown> {
  return { systemInstruction: { parts: [{ text: system }] }, contents: [{ role: 'user', parts: [{ text: user }] }] };
}

/** The generationConfig fields that ask for the constraint in `dialect`. */
export function geminiConstraintFields(dialect: GeminiDialect, schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  switch (dialect) {
    case 'gemini_json_schema':
      return { responseMimeType: 'application/json', responseJsonSchema: schema };
    default:
      return assertNever(dialect, 'gemini dialect');
  }
}

/** The whole generateContent body; a parameter left null is not sent (the model's default applies). */
export function geminiRequestBody(system: string, user: string, dialect: GeminiDialect, schema: Readonly<Record<string, unknown>>, params: ModelParams, maxOutputTokens: number): Record<string, unknown> {
  return {
    ...geminiPromptOf(system, user),
    generationConfig: {
      ...geminiConstraintFields(dialect, schema),
      maxOutputTokens,
      candidateCount: 1,
      ...(params.temperature === null ? {} : { temperature: params.temperature }),
      ...(params.top_p === null ? {} : { topP: params.top_p }),
      ...(params.seed === null ? {} : { seed: params.seed }),
    },
  };
}
