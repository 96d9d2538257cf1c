// The answer schema held to a dialect's documented subset (issue 36 item 2): `checkSubset` lists
// every keyword outside it (where, which rule, whether leaving it out is enough) and every
// structural demand the schema breaks; `stripSubset` leaves out what may be left out and checks
// the result again, so what it returns as sendable is inside the subset or named as not. Pure.
import type { RemovedKeyword } from '../../schema/model-call-policy.js';
import type { KeywordRule, Remedy, SchemaSubset } from './schema-subset.js';

type Node = Readonly<Record<string, unknown>>;

export interface SubsetViolation {
  /** JSON Pointer of the node holding the keyword ('' for the root). */
  readonly path: string;
  readonly keyword: string;
  readonly rule: string;
  /** How leaving it out is done; null: leaving keywords out cannot meet the rule (a structural demand). */
  readonly remedy: Remedy | null;
}

/** Keywords whose value is a map of subschemas. */
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions']);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
/** Keywords whose value is one subschema (items and additionalProperties may also be a list or a boolean). */
const SCHEMA_ONE = new Set(['items', 'not', 'additionalProperties']);
/** The most nodes a schema may have before the check gives up (the answer schema has a few hundred). */
const MAX_NODES = 20_000;

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const pointer = (path: string, key: string | number): string => `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;

/** Every schema node with its JSON Pointer, the root first. */
function nodesOf(schema: Node): { path: string; node: Node }[] {
  const out: { path: string; node: Node }[] = [];
  const visit = (node: unknown, path: string): void => {
    if (!isNode(node)) return;
    if (out.length >= MAX_NODES) throw new Error(`the schema has more than ${MAX_NODES} nodes: too large to check against a subset`);
    out.push({ path, node });
    for (const [key, value] of Object.entries(node)) {
      if (SCHEMA_MAPS.has(key) && isNode(value)) for (const [name, sub] of Object.entries(value)) visit(sub, pointer(pointer(path, key), name));
      else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) value.forEach((sub, i) => visit(sub, pointer(pointer(path, key), i)));
      else if (SCHEMA_ONE.has(key)) {
        if (Array.isArray(value)) value.forEach((sub, i) => visit(sub, pointer(pointer(path, key), i)));
        else visit(value, pointer(path, key));
      }
    }
  };
  visit(schema, '');
  return out;
}

function isUnion(node: Node): boolean {
  return Array.isArray(node['anyOf']) || Array.isArray(node['oneOf']) || Array.isArray(node['type']);
}

function structuralViolations(subset: SchemaSubset, path: string, node: Node): SubsetViolation[] {
  const out: SubsetViolation[] = [];
  const d = subset.demands;
  const isObject = node['type'] === 'object' || isNode(node['properties']);
  if (path === '' && d.rootObject && (node['type'] !== 'object' || isUnion(node))) out.push({ path, keyword: 'type', rule: 'the root must be an object, not a union', remedy: null });
  if (!isObject) return out;
  if (d.additionalPropertiesFalse && node['additionalProperties'] !== false) out.push({ path, keyword: 'additionalProperties', rule: 'every object must say additionalProperties: false', remedy: null });
  if (d.everyPropertyRequired) {
    const required = new Set(Array.isArray(node['required']) ? node['required'] : []);
    const optional = Object.keys(isNode(node['properties']) ? node['properties'] : {}).filter((k) => !required.has(k));
    if (optional.length > 0) out.push({ path, keyword: 'required', rule: `every property must be required (optional here: ${optional.join(', ')}); make it required and nullable`, remedy: null });
  }
  return out;
}

/**
 * Whether every two branches of a union differ in the `const` of a property both require: then
 * at most one branch matches any value, and `anyOf` says what `oneOf` says.
 */
export function branchesExclusive(branches: unknown): boolean {
  if (!Array.isArray(branches)) return false;
  const constsOf = (b: unknown): Map<string, unknown> => {
    const out = new Map<string, unknown>();
    if (!isNode(b) || !isNode(b['properties']) || !Array.isArray(b['required'])) return out;
    for (const [name, sub] of Object.entries(b['properties'])) if (b['required'].includes(name) && isNode(sub) && 'const' in sub) out.set(name, sub['const']);
    return out;
  };
  const consts = branches.map(constsOf);
  return consts.every((a, i) => consts.every((b, j) => j <= i || [...a].some(([name, value]) => b.has(name) && b.get(name) !== value)));
}

function keywordViolation(subset: SchemaSubset, rules: ReadonlyMap<string, KeywordRule>, path: string, node: Node, keyword: string): SubsetViolation | null {
  const rule = rules.get(keyword);
  if (rule !== undefined && (rule.breaks === undefined || rule.breaks(node[keyword], node))) return { path, keyword, rule: rule.rule, remedy: rule.remedy };
  if (rule === undefined && !subset.keywords.includes(keyword)) return { path, keyword, rule: `not among the keywords the ${subset.dialect} subset documents`, remedy: 'remove' };
  return null;
}

/** Every keyword of `schema` outside `subset`, and every structural demand it breaks (empty: inside the subset; always empty for a dialect that sends no schema). */
export function checkSubset(schema: Node, subset: SchemaSubset): SubsetViolation[] {
  if (!subset.sendsSchema) return [];
  const rules = new Map(subset.rules.map((r) => [r.keyword, r]));
  const out: SubsetViolation[] = [];
  const nodes = nodesOf(schema);
  for (const { path, node } of nodes) {
    out.push(...structuralViolations(subset, path, node));
    for (const keyword of Object.keys(node)) {
      const v = keywordViolation(subset, rules, path, node, keyword);
      if (v !== null) out.push(v);
    }
  }
  const unions = nodes.filter((n) => isUnion(n.node)).length;
  if (subset.demands.maxUnionNodes !== null && unions > subset.demands.maxUnionNodes) out.push({ path: '', keyword: 'anyOf', rule: `at most ${subset.demands.maxUnionNodes} nodes may hold a union; the schema has ${unions}`, remedy: null });
  return out;
}

function applyRemedy(node: Node, keyword: string, remedy: Remedy): { node: Node; sentAs: string | null } {
  const { [keyword]: value, ...rest } = node;
  switch (remedy) {
    case 'remove':
      return { node: rest, sentAs: null };
    case 'as_anyOf':
      return { node: { ...rest, anyOf: value }, sentAs: 'anyOf' };
    case 'as_enum':
      return { node: { ...rest, enum: [value] }, sentAs: 'enum' };
  }
}

/** A copy of `schema` with the node at `path` replaced by `edit(node)`. */
function editAt(schema: Node, path: string, edit: (node: Node) => Node): Node {
  if (path === '') return edit(schema);
  const [head, ...tail] = path.slice(1).split('/');
  const key = head!.replaceAll('~1', '/').replaceAll('~0', '~');
  const rest = tail.length === 0 ? '' : `/${tail.join('/')}`;
  const child = (schema as Record<string, unknown>)[key];
  if (Array.isArray(schema)) {
    const copy = [...(schema as unknown[])];
    copy[Number(key)] = editAt(copy[Number(key)] as Node, rest, edit);
    return copy as unknown as Node;
  }
  return { ...schema, [key]: editAt(child as Node, rest, edit) };
}

export interface StrippedSchema {
  /** The schema with every keyword that may be left out left out. */
  readonly schema: Node;
  readonly removed: readonly RemovedKeyword[];
  /** What is still outside the subset after stripping: what leaving keywords out cannot meet. */
  readonly remaining: readonly SubsetViolation[];
}

/** The schema as `strip` sends it: fixable violations left out (deepest first, so paths stay valid), then checked again. */
export function stripSubset(schema: Node, subset: SchemaSubset): StrippedSchema {
  const fixable = checkSubset(schema, subset).filter((v): v is SubsetViolation & { remedy: Remedy } => v.remedy !== null);
  let out = schema;
  const removed: RemovedKeyword[] = [];
  for (const v of [...fixable].sort((a, b) => b.path.length - a.path.length)) {
    out = editAt(out, v.path, (node) => {
      const applied = applyRemedy(node, v.keyword, v.remedy);
      removed.push({ path: v.path, keyword: v.keyword, sent_as: applied.sentAs });
      return applied.node;
    });
  }
  removed.sort((a, b) => (a.path === b.path ? a.keyword.localeCompare(b.keyword) : a.path < b.path ? -1 : 1));
  return { schema: out, removed, remaining: checkSubset(out, subset) };
}
