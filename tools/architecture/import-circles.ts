// Import circles (issue 33, "Done when": 0 circles): files that reach themselves through their
// relative imports. A circle makes a group of files one unit in disguise — none can be read,
// tested or moved without the others, and module initialisation order starts to matter — so the
// house has none, the tools and the rooms alike (test/architecture/rooms.test.ts holds it).
// Found as the strongly connected components of the file graph (Tarjan's algorithm, iterative, so
// a deep chain cannot overflow the stack); a file importing itself is a circle of one.
import { relativeImportsOf } from './floor-plan-check.js';
import type { SourceFile } from './source-tree.js';

/** One circle: its files, sorted, each importing the next around the circle somewhere. */
export type ImportCircle = readonly string[];

/** The file an import names: `x.js` is `x.ts` when the tree has it. */
function targetFile(target: string, paths: ReadonlySet<string>): string | null {
  const ts = target.replace(/\.js$/, '.ts');
  return paths.has(ts) ? ts : paths.has(target) ? target : null;
}

function graphOf(files: readonly SourceFile[]): Map<string, string[]> {
  const paths = new Set(files.map((f) => f.path));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = relativeImportsOf(file).flatMap((edge) => {
      const to = edge.target === null ? null : targetFile(edge.target, paths);
      return to === null ? [] : [to];
    });
    graph.set(file.path, [...new Set(targets)].sort());
  }
  return graph;
}

/** Every import circle among the files, in path order. */
export function importCircles(files: readonly SourceFile[]): ImportCircle[] {
  const graph = graphOf(files);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: ImportCircle[] = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    // Each frame: a file and how many of its imports have been followed.
    const frames: Array<{ file: string; at: number }> = [{ file: root, at: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const targets = graph.get(frame.file)!;
      if (frame.at < targets.length) {
        const to = targets[frame.at++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          frames.push({ file: to, at: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.file, Math.min(low.get(frame.file)!, index.get(to)!));
        }
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(frame.file)!));
      if (low.get(frame.file) !== index.get(frame.file)) continue;
      const component: string[] = [];
      for (;;) {
        const member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
        if (member === frame.file) break;
      }
      if (component.length > 1 || graph.get(frame.file)!.includes(frame.file)) circles.push(component.sort());
    }
  }
  return circles.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}
