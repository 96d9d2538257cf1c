// HTML escaping, for every page the apparatus writes (the reviewer's scorecard, a study's report,
// the audit desk): each shows text a model or a world script wrote, so an unescaped value could
// script or restyle the reader's page. One definition, in the innermost room, so the rooms that
// write pages share it instead of copying it or importing it from each other.

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Safe in element content and in quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}
