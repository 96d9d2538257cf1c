// The event-type literals of a program that the compiler does not check against the catalogue's
// union (issue 17 item 4). A 'Category.Name' string is checked when the compiler compares it with
// a union of string literal types: where it is expected as such (a parameter, field, return or
// variable typed EventType or a subset of it — its contextual type), as a `case` of a switch over
// such a value, as an operand of ===/!== beside such a value, as the key of an object or index
// whose type lists its keys, or as a type argument constrained to such a union. Anywhere else a
// misspelt type compiles (`const t: string = 'SystemEvent.StoreSeald'`, `new Set(['…'])`,
// `Record<string, …>` keys, a `'…'` inside SQL text) and is found only when a run goes wrong.
//
// Known blind spot: a literal passed straight to a generic parameter is judged by the parameter's
// declared type (T → its constraint), but one nested inside such an argument (`f<T extends
// string>([…])`) is judged by the instantiated type, where the compiler has inferred the literal
// itself; no production code passes event types that way.
import path from 'node:path';
import ts from 'typescript';
import { EVENT_CATEGORIES } from '../../schema/event-definition.js';

const CATEGORY = `(?:${EVENT_CATEGORIES.join('|')})`;
/** A whole literal that names an event type. */
const EVENT_TYPE_TEXT = new RegExp(`^${CATEGORY}\\.[A-Za-z]+$`);
/** An event type quoted inside longer text (SQL spells a string value in single quotes). */
const QUOTED_EVENT_TYPE = new RegExp(`'${CATEGORY}\\.[A-Za-z]+'`);
/** Text that reads as SQL (the stores' queries name the column event_type). */
const LOOKS_LIKE_SQL = /\b(?:event_type|select|where|from|insert|update|delete)\b/i;

export interface UncheckedLiteral {
  /** Path relative to the program's root folder. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
  readonly why: string;
}

export interface LiteralScan {
  /** Event-type literals seen in scope, checked or not (so an empty scan cannot pass for a clean one). */
  readonly seen: number;
  readonly unchecked: UncheckedLiteral[];
}

/** Every unchecked event-type literal in the program's files that `inScope` admits. */
export function uncheckedEventTypeLiterals(program: ts.Program, rootDir: string, inScope: (relativePath: string) => boolean): LiteralScan {
  const checker = program.getTypeChecker();
  const found: UncheckedLiteral[] = [];
  let seen = 0;
  for (const source of program.getSourceFiles()) {
    if (source.isDeclarationFile) continue;
    const relative = path.relative(rootDir, source.fileName).split(path.sep).join('/');
    if (relative.startsWith('..') || !inScope(relative)) continue;
    const report = (node: ts.Node, text: string, why: string): void => {
      const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push({ file: relative, line: line + 1, column: character + 1, text, why });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        if (EVENT_TYPE_TEXT.test(node.text)) {
          seen += 1;
          const why = uncheckedBecause(checker, node);
          if (why !== null) report(node, node.text, why);
        } else if (QUOTED_EVENT_TYPE.test(node.text) && LOOKS_LIKE_SQL.test(node.text)) {
          report(node, excerpt(node.text), 'an event type spelt inside SQL text (bind it as a parameter)');
        }
      } else if (ts.isTemplateExpression(node)) {
        const text = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join('${…}');
        if (QUOTED_EVENT_TYPE.test(text) && LOOKS_LIKE_SQL.test(text)) report(node, excerpt(text), 'an event type spelt inside SQL text (bind it as a parameter)');
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { seen, unchecked: found };
}

/** Findings grouped by file, one line each: what a failing test prints. */
export function describeUnchecked(found: readonly UncheckedLiteral[]): string {
  const byFile = new Map<string, UncheckedLiteral[]>();
  for (const f of found) byFile.set(f.file, [...(byFile.get(f.file) ?? []), f]);
  const lines: string[] = [`${found.length} event-type literal(s) in ${byFile.size} file(s) not checked against the catalogue's union:`];
  for (const [file, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`${file} (${list.length})`);
    for (const f of list) lines.push(`  ${file}:${f.line}:${f.column}  ${JSON.stringify(f.text)}  — ${f.why}`);
  }
  return lines.join('\n');
}

/** Null when the compiler checks this event-type literal against a literal union; else why not. */
function uncheckedBecause(checker: ts.TypeChecker, literal: ts.StringLiteral | ts.NoSubstitutionTemplateLiteral): string | null {
  const parent = literal.parent;
  if (ts.isLiteralTypeNode(parent)) {
    return typeArgumentConstraint(checker, parent) ? null : 'a literal type not constrained to the catalogue (use EventType, PayloadOf<…> or typeof Def.type)';
  }
  if (ts.isCaseClause(parent) && parent.expression === literal) {
    return isLiteralUnion(checker, checker.getTypeAtLocation(parent.parent.parent.expression)) ? null : 'a case of a switch over a plain string';
  }
  if (ts.isBinaryExpression(parent) && isEqualityOperator(parent.operatorToken.kind)) {
    const other = parent.left === literal ? parent.right : parent.left;
    return isLiteralUnion(checker, checker.getTypeAtLocation(other)) ? null : 'compared with a plain string (use eventIs/eventIsOneOf or a typed value)';
  }
  if ((ts.isPropertyAssignment(parent) || ts.isPropertySignature(parent) || ts.isPropertyDeclaration(parent) || ts.isMethodDeclaration(parent)) && parent.name === literal) {
    if (ts.isPropertyAssignment(parent) && ts.isObjectLiteralExpression(parent.parent)) {
      const owner = checker.getContextualType(parent.parent);
      return owner && listsKey(checker, owner, literal.text) ? null : 'a key of an object whose type does not list its keys (type it Record<EventType, …>)';
    }
    return 'a property named by hand in a type (derive it from EventType)';
  }
  if (ts.isElementAccessExpression(parent) && parent.argumentExpression === literal) {
    return listsKey(checker, checker.getTypeAtLocation(parent.expression), literal.text) ? null : 'an index into a value whose type does not list its keys';
  }
  const expected = declaredParameterType(checker, literal) ?? checker.getContextualType(literal);
  if (expected && isLiteralUnion(checker, expected)) return null;
  return expected ? `expected as ${checker.typeToString(expected)}, not as the catalogue's EventType` : 'nothing tells the compiler it is an event type';
}

function isEqualityOperator(kind: ts.SyntaxKind): boolean {
  return kind === ts.SyntaxKind.EqualsEqualsEqualsToken || kind === ts.SyntaxKind.ExclamationEqualsEqualsToken || kind === ts.SyntaxKind.EqualsEqualsToken || kind === ts.SyntaxKind.ExclamationEqualsToken;
}

/** A string literal type, or a union of them (undefined/null aside); type parameters by their constraint. */
function isLiteralUnion(checker: ts.TypeChecker, type: ts.Type): boolean {
  const resolved = type.flags & ts.TypeFlags.TypeParameter ? checker.getBaseConstraintOfType(type) : type;
  if (!resolved) return false;
  const members = resolved.isUnion() ? resolved.types : [resolved];
  const literals = members.filter((m) => m.isStringLiteral());
  const others = members.filter((m) => !m.isStringLiteral() && !(m.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)));
  return literals.length > 0 && others.length === 0;
}

/** Whether `type` (an object) names `key` among its properties and takes no other string keys. */
function listsKey(checker: ts.TypeChecker, type: ts.Type, key: string): boolean {
  const members = type.isUnion() ? type.types : [type];
  return members.every((m) => checker.getIndexInfoOfType(m, ts.IndexKind.String) === undefined && checker.getPropertyOfType(m, key) !== undefined);
}

/**
 * For a literal passed straight as an argument: the parameter's declared type (a type parameter
 * by its constraint), since the instantiated one is the literal the compiler inferred from it.
 */
function declaredParameterType(checker: ts.TypeChecker, literal: ts.Expression): ts.Type | undefined {
  const call = literal.parent;
  if (!(ts.isCallExpression(call) || ts.isNewExpression(call)) || !call.arguments) return undefined;
  const index = call.arguments.indexOf(literal);
  if (index < 0) return undefined;
  const declaration = checker.getResolvedSignature(call)?.getDeclaration();
  if (!declaration || !('parameters' in declaration)) return undefined;
  const parameters = declaration.parameters;
  const last = parameters[parameters.length - 1];
  const parameter = parameters[index] ?? (last?.dotDotDotToken ? last : undefined);
  if (!parameter?.type) return undefined;
  let declared = checker.getTypeFromTypeNode(parameter.type);
  if (parameter.dotDotDotToken && index >= parameters.length - 1) {
    declared = checker.getIndexTypeOfType(declared, ts.IndexKind.Number) ?? declared;
  }
  if (declared.flags & ts.TypeFlags.TypeParameter) return checker.getBaseConstraintOfType(declared) ?? declared;
  return declared;
}

/** Whether a literal type node is a type argument whose parameter is constrained to a literal union. */
function typeArgumentConstraint(checker: ts.TypeChecker, node: ts.LiteralTypeNode): boolean {
  const reference = node.parent;
  if (!ts.isTypeReferenceNode(reference) || !reference.typeArguments) return false;
  const index = reference.typeArguments.indexOf(node);
  const symbol = checker.getSymbolAtLocation(reference.typeName);
  const target = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  for (const declaration of target?.declarations ?? []) {
    if (!('typeParameters' in declaration)) continue;
    const constraint = (declaration.typeParameters as ts.NodeArray<ts.TypeParameterDeclaration> | undefined)?.[index]?.constraint;
    if (constraint && isLiteralUnion(checker, checker.getTypeFromTypeNode(constraint))) return true;
  }
  return false;
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 100 ? `${flat.slice(0, 97)}...` : flat;
}
