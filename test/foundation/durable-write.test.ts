// The one durable replace (foundation/durable-write.ts): a failure at either step leaves the
// target's old bytes and no temp file; an exclusive open never takes over a file at the temp
// name (it may be someone else's) and never follows a symlink planted there.
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { FileReplaceError, replaceFileDurably } from '../../foundation/durable-write.js';

function folder(): string {
  return mkdtempSync(path.join(tmpdir(), 'durable-write-'));
}

describe('replaceFileDurably', () => {
  test('replaces the bytes whole and leaves nothing beside them', () => {
    const dir = folder();
    const target = path.join(dir, 'a.md');
    writeFileSync(target, 'old');
    replaceFileDurably(target, Buffer.from('new'), { temp: path.join(dir, '.a.md.tmp'), mode: 0o644, exclusive: true });
    expect(readFileSync(target, 'utf8')).toBe('new');
    expect(readdirSync(dir)).toEqual(['a.md']);
  });

  test('a failure before the rename keeps the old bytes and removes the temp file (step named)', () => {
    const dir = folder();
    const target = path.join(dir, 'a.md');
    writeFileSync(target, 'old');
    const failing = () => {
      throw Object.assign(new Error('EPERM: not allowed'), { code: 'EPERM' });
    };
    const attempt = () => replaceFileDurably(target, Buffer.from('new'), { temp: path.join(dir, '.a.md.tmp'), mode: 0o644, exclusive: false, beforeRename: failing });
    expect(attempt).toThrow(FileReplaceError);
    expect(attempt).toThrow(expect.objectContaining({ step: 'write', errno: 'EPERM' }));
    expect(readFileSync(target, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['a.md']);
  });

  test('a failed rename (the target is a folder) removes the temp file', () => {
    const dir = folder();
    const target = path.join(dir, 'a.md');
    mkdirSync(path.join(target, 'inner'), { recursive: true });
    const attempt = () => replaceFileDurably(target, Buffer.from('new'), { temp: path.join(dir, '.a.md.tmp'), mode: 0o644, exclusive: true });
    expect(attempt).toThrow(expect.objectContaining({ step: 'rename' }));
    expect(readdirSync(dir)).toEqual(['a.md']);
  });

  test('exclusive: a file or a planted symlink at the temp name is refused and left alone', () => {
    const dir = folder();
    const target = path.join(dir, 'a.md');
    const temp = path.join(dir, '.a.md.tmp');
    writeFileSync(temp, 'someone else');
    expect(() => replaceFileDurably(target, Buffer.from('new'), { temp, mode: 0o644, exclusive: true })).toThrow(expect.objectContaining({ step: 'write', errno: 'EEXIST' }));
    expect(readFileSync(temp, 'utf8')).toBe('someone else');
    const outside = path.join(folder(), 'victim');
    writeFileSync(outside, 'untouched');
    const planted = path.join(dir, '.b.md.tmp');
    symlinkSync(outside, planted);
    expect(() => replaceFileDurably(path.join(dir, 'b.md'), Buffer.from('new'), { temp: planted, mode: 0o644, exclusive: true })).toThrow(FileReplaceError);
    expect(readFileSync(outside, 'utf8')).toBe('untouched');
  });

  test('a temp name outside the target folder is a bug, refused before any write', () => {
    const dir = folder();
    expect(() => replaceFileDurably(path.join(dir, 'a.md'), Buffer.from('x'), { temp: path.join(folder(), 't'), mode: 0o644, exclusive: true })).toThrow(/not beside/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
