// The audit desk over a whole study folder (issue 35 item 5), on 127.0.0.1 like the one-run desk
// and under its rules (GET and HEAD only, the Host checked, bounded URLs, no script):
//   /                        the study: verdict, findings linked to their events, instances
//   /report.html             the report, its findings linked to the desk (rendered from report.json)
//   /replicate/<k>           replicate k's wakes
//   /wake/<k>/<wake_id>      that wake of A, B and C side by side
//   /run/<G>-r<k>/...        the instance's own desk pages, every one of them
// An instance's pages are the desk's own, rendered for its run and moved under its prefix: the
// desk links by absolute path (/event/5), so each href, action and redirect it wrote is given the
// prefix. Only markup the desk wrote can carry `href="/`: text from a run is escaped, its quotes
// included (foundation/html-escape.ts), so it cannot form one.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GROUPS } from '../design/groups.js';
import type { ReportInstance, StudyReport } from '../oracle/study-report.js';
import { deskAnswer, listenOnLoopback, refusal, RequestProblem, requestUrl, send, sendAnswer, type Answer, type AuditServer } from './audit-server.js';
import { html } from './html.js';
import { renderStudyFrame } from './pages/layout.js';
import { replicatePage, runHref, studyHeader, studyPage } from './pages/study-pages.js';
import { wakePage, type WakeColumn } from './pages/wake-page.js';
import { instanceKey } from './report-findings.js';
import type { StudyView } from './study-view.js';
import { wakeRecord } from './wake-record.js';

/** The report page carries its own inline style (study/report-html.ts): its CSP allows that and nothing else. */
export const REPORT_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface StudyServerOptions {
  readonly port: number;
  readonly log: (line: string) => void;
  /** report.html of the report with each finding's seq a link (study/report-html.ts; the audit room does not import study/). */
  readonly renderReport: (report: StudyReport, findingHref: (instance: ReportInstance, seq: number) => string) => string;
}

/** The desk's page for a run, moved under the instance's prefix, with a way back to the study. */
function underPrefix(key: string, answer: Answer): Answer {
  const prefix = runHref(key).slice(0, -1);
  if ('redirect' in answer) return { redirect: `${prefix}${answer.redirect}` };
  if (answer.type !== undefined && !answer.type.startsWith('text/html')) return answer;
  const body = answer.body.replace(/(href|action)="\//g, `$1="${prefix}/`).replace('<nav>', html`<nav><a href="/" id="study-link">← Study</a> <strong>${key}</strong> ·`.text);
  return { ...answer, body };
}

/** A path segment decoded, or a 400 saying it is not one. */
function segment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RequestProblem(400, `${JSON.stringify(text.slice(0, 40))} is not a well-formed path segment (a % must start an escape)`);
  }
}

function replicateOf(view: StudyView, text: string): number {
  const k = /^\d{1,6}$/.test(text) ? Number(text) : NaN;
  if (!view.replicates().includes(k)) throw new RequestProblem(404, `no replicate ${JSON.stringify(text.slice(0, 40))} in this study: it has ${view.replicates().join(', ') || 'none'}`);
  return k;
}

function wakeColumns(view: StudyView, replicate: number, wakeId: string): WakeColumn[] {
  return GROUPS.map((group) => {
    const instance = view.instances.find((i) => i.replicate === replicate && i.group === group) ?? null;
    if (instance === null) return { instance, problem: `the study has no ${group}-r${replicate}` };
    try {
      const desk = view.desk(instance);
      const record = desk.within(() => wakeRecord(desk, wakeId));
      return record === null ? { instance, problem: `${instance.key} has no wake ${wakeId}` } : { instance, record };
    } catch (error) {
      return { instance, problem: `${instance.key} cannot be read: ${error instanceof Error ? error.message : String(error)}` };
    }
  });
}

function replicateWakes(view: StudyView, replicate: number): { wakes: Map<string, Map<string, string>>; problems: string[] } {
  const wakes = new Map<string, Map<string, string>>();
  const problems: string[] = [];
  for (const instance of view.instances.filter((i) => i.replicate === replicate)) {
    try {
      for (const w of view.desk(instance).index.wakes) {
        if (!wakes.has(w.wake_id)) wakes.set(w.wake_id, new Map());
        wakes.get(w.wake_id)!.set(instance.key, w.outcome ?? 'never ended');
      }
    } catch (error) {
      problems.push(`${instance.key} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { wakes, problems };
}

function runAnswer(view: StudyView, parts: readonly string[], url: URL, rawUrl: string, log: (line: string) => void): Answer {
  const key = segment(parts[1] ?? '');
  const instance = view.instance(key);
  if (instance === null) throw new RequestProblem(404, `no instance ${JSON.stringify(key.slice(0, 40))} in this study`);
  const desk = view.desk(instance);
  const inner = new URL(url.toString());
  inner.pathname = `/${parts.slice(2).join('/')}`;
  return underPrefix(key, deskAnswer(desk, inner, rawUrl, log));
}

function route(view: StudyView, url: URL, rawUrl: string, options: StudyServerOptions): Answer {
  const parts = url.pathname.split('/').filter((p) => p !== '');
  switch (parts[0] ?? '') {
    case '':
      return { status: 200, body: studyPage(view) };
    case 'report.html': {
      if (view.report?.ok !== true) throw new RequestProblem(404, view.report === null ? 'the study has no report.json yet' : view.report.problem);
      return { status: 200, body: options.renderReport(view.report.value, (i, seq) => runHref(instanceKey(i), `event/${seq}`)), csp: REPORT_PAGE_CSP };
    }
    case 'replicate': {
      const k = replicateOf(view, parts[1] ?? '');
      const { wakes, problems } = replicateWakes(view, k);
      return { status: 200, body: replicatePage(view, k, wakes, problems) };
    }
    case 'wake': {
      const k = replicateOf(view, parts[1] ?? '');
      const wakeId = segment(parts[2] ?? '');
      if (wakeId === '') throw new RequestProblem(404, `name a wake: /wake/${k}/<wake id> (see /replicate/${k})`);
      const columns = wakeColumns(view, k, wakeId);
      if (columns.every((c) => 'problem' in c)) throw new RequestProblem(404, `no instance of replicate ${k} shows wake ${JSON.stringify(wakeId.slice(0, 80))}: ${columns.map((c) => ('problem' in c ? c.problem : '')).join('; ')} (its wakes are listed on /replicate/${k})`);
      return { status: 200, body: wakePage(view, k, wakeId, columns) };
    }
    case 'run':
      return runAnswer(view, parts, url, rawUrl, options.log);
    default:
      throw new RequestProblem(404, `no page ${url.pathname}`);
  }
}

function studyProblem(view: StudyView, title: string, message: string): string {
  return renderStudyFrame(title, studyHeader(view), html`<div class="alarm" id="problem">${message}</div>`);
}

function answerStudy(view: StudyView, rawUrl: string, port: number, options: StudyServerOptions): Answer {
  try {
    return route(view, requestUrl(rawUrl, port), rawUrl, options);
  } catch (error) {
    if (error instanceof RequestProblem) return { status: error.status, body: studyProblem(view, `Cannot show ${rawUrl}`, error.message) };
    // An instance that cannot be opened (damaged, locked, not a run) is that instance's answer, not the study's failure.
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    options.log(`audit: ${rawUrl}: ${message}`);
    return { status: 422, body: studyProblem(view, `Cannot show ${rawUrl}`, message) };
  }
}

export function handleStudy(view: StudyView, request: IncomingMessage, response: ServerResponse, port: number, options: StudyServerOptions): void {
  const method = request.method ?? '';
  const refused = refusal(request, port);
  if (refused !== null) {
    if (refused.allow !== undefined) response.setHeader('allow', refused.allow);
    return send(response, refused.status === 405 ? 'GET' : method, refused.status, refused.body);
  }
  sendAnswer(response, method, answerStudy(view, request.url ?? '/', port, options));
}

/** Serves the study on 127.0.0.1:`port` (0: any free port). */
export function startStudyServer(view: StudyView, options: StudyServerOptions): Promise<AuditServer> {
  return listenOnLoopback((request, response, port) => handleStudy(view, request, response, port, options), options.port);
}
