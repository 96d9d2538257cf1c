// The rooms table of docs/architecture.md held to the floor plan (foundation/rooms.ts): the page
// a newcomer reads first must say what the code enforces, so the architecture test parses the
// table — the one whose header has a "Room" and a "May import" column — and compares each row
// with ROOMS: the same rooms, in the same order (innermost first), each with the same imports.
// When they differ it prints the row ROOMS implies, to paste.
import { ROOMS } from '../../foundation/rooms.js';
import type { FloorPlan } from './floor-plan-check.js';

export interface RoomsTableRow {
  readonly room: string;
  readonly mayImport: readonly string[];
  /** 1-based line of the row in the page. */
  readonly line: number;
}

/** Cells of a Markdown table row (`| a | b |`), trimmed; null when the line is no table row. */
function cellsOf(line: string): string[] | null {
  const trimmed = line.trim();
  if (!trimmed.startsWith('|')) return null;
  return trimmed.replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

/** A room's name as a cell writes it: `` `oracle/` `` or oracle. */
function nameOf(cell: string): string {
  return cell.replace(/`/g, '').trim().replace(/\/$/, '');
}

/** The cell's rooms: comma-separated names; a dash or an empty cell is none. */
function namesOf(cell: string): string[] {
  const text = cell.replace(/`/g, '').trim();
  if (text === '' || /^[-—–]$/.test(text) || /^none$/i.test(text)) return [];
  return text.split(',').map(nameOf).filter((n) => n !== '');
}

/** The rows of the page's rooms table (the first table with a "Room" and a "May import" column); null when it has none. */
export function parseRoomsTable(markdown: string): RoomsTableRow[] | null {
  const lines = markdown.split('\n');
  for (let k = 0; k < lines.length; k++) {
    const header = cellsOf(lines[k]!);
    if (header === null) continue;
    const roomColumn = header.findIndex((c) => /^room$/i.test(nameOf(c)));
    const importColumn = header.findIndex((c) => /^may import$/i.test(nameOf(c)));
    if (roomColumn === -1 || importColumn === -1) continue;
    const rows: RoomsTableRow[] = [];
    // k + 1 is the |---| line; the table ends at the first line that is no row.
    for (let r = k + 2; r < lines.length; r++) {
      const cells = cellsOf(lines[r]!);
      if (cells === null) break;
      rows.push({ room: nameOf(cells[roomColumn] ?? ''), mayImport: namesOf(cells[importColumn] ?? ''), line: r + 1 });
    }
    return rows;
  }
  return null;
}

/** The "May import" cell ROOMS implies for a room. */
export function mayImportCell(plan: FloorPlan, room: string): string {
  const below = plan[room] ?? [];
  return below.length === 0 ? '—' : below.map((r) => `\`${r}\``).join(', ');
}

/** Every way the page's table differs from the floor plan; empty when it says what ROOMS says. */
export function roomsTableDifferences(markdown: string, plan: FloorPlan = ROOMS): string[] {
  const rows = parseRoomsTable(markdown);
  if (rows === null) return ['no rooms table: expected a Markdown table with a "Room" and a "May import" column'];
  const differences: string[] = [];
  const rooms = Object.keys(plan);
  const listed = rows.map((r) => r.room);
  for (const room of rooms) {
    if (!listed.includes(room)) differences.push(`room ${room} is missing from the table: add the row | \`${room}/\` | … | ${mayImportCell(plan, room)} |`);
  }
  for (const row of rows) {
    if (!rooms.includes(row.room)) {
      differences.push(`line ${row.line}: room ${JSON.stringify(row.room)} is no room of foundation/rooms.ts`);
      continue;
    }
    if (listed.indexOf(row.room) !== listed.lastIndexOf(row.room) && listed.indexOf(row.room) !== rows.indexOf(row)) {
      differences.push(`line ${row.line}: room ${row.room} is listed twice`);
      continue;
    }
    const expected = plan[row.room]!;
    const extra = row.mayImport.filter((r) => !expected.includes(r));
    const missing = expected.filter((r) => !row.mayImport.includes(r));
    if (extra.length > 0 || missing.length > 0) {
      const said = [...(extra.length > 0 ? [`lists ${extra.join(', ')}, which ROOMS does not`] : []), ...(missing.length > 0 ? [`leaves out ${missing.join(', ')}`] : [])].join(' and ');
      differences.push(`line ${row.line}: ${row.room} ${said}: its "May import" cell should read ${mayImportCell(plan, row.room)}`);
    }
  }
  const shared = listed.filter((r, i) => rooms.includes(r) && listed.indexOf(r) === i);
  const planOrder = rooms.filter((r) => shared.includes(r));
  if (shared.join() !== planOrder.join()) differences.push(`the rows are not in the floor plan's order (innermost first): ${rooms.join(', ')}`);
  return differences;
}
