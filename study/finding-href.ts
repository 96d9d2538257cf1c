// Where the study desk shows an instance's event (npm run audit -- STUDY serves the report with
// it): the report's findings and its 72-hour strips link there. The file on disk is written
// without, so its seqs and marks stay plain text rather than links that lead nowhere when it is
// opened as a file. Its own file so that report-html.ts and report-timeline.ts both take it
// without importing each other.
import type { ReportInstance } from '../oracle/study-report.js';

export type FindingHref = (instance: ReportInstance, seq: number) => string;
