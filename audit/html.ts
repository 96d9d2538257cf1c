// HTML built only through a tagged template that escapes every interpolated value unless it
// is already SafeHtml: the audit desk shows text written by a model and by a world script,
// so an unescaped value would let a run's content script the auditor's page. The page's
// Content-Security-Policy (pages/layout.ts) refuses scripts anyway; this keeps markup intact.
import { escapeHtml } from '../foundation/html-escape.js';

export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = SafeHtml | string | number | boolean | null | undefined | readonly Part[];

function render(value: Part): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map((v: Part) => render(v)).join('');
  return escapeHtml(String(value));
}

/** `html\`<td>${text}</td>\``: strings and numbers escaped, SafeHtml kept, arrays joined, null/undefined/false empty. */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i] as Part) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** A query string from pairs; repeated keys allowed, empty values dropped. */
export function query(pairs: readonly (readonly [string, string | number | null | undefined])[]): string {
  const params = new URLSearchParams();
  for (const [key, value] of pairs) if (value !== null && value !== undefined && value !== '') params.append(key, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
