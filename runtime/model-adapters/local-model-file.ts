// The model file the local adapter loads, checked before the engine sees it (exists, readable, a
// GGUF by its magic) and hashed (the manifest pins the file by its sha256): each refusal a typed
// error naming the file.
import { createHash } from 'node:crypto';
import { createReadStream, closeSync, openSync, readSync, statSync } from 'node:fs';
import { InternalError } from '../../foundation/typed-error.js';

const GGUF_MAGIC = 'GGUF';

/** The model file does not exist. */
export class LocalModelMissingError extends InternalError {
  override readonly name = 'LocalModelMissingError';
}

/** The model file exists but this process may not read it. */
export class LocalModelUnreadableError extends InternalError {
  override readonly name = 'LocalModelUnreadableError';
}

/** The file is not a GGUF model (wrong magic bytes, too short, a directory). */
export class LocalModelNotGgufError extends InternalError {
  override readonly name = 'LocalModelNotGgufError';
}

/** The model file's size, after checking it exists, is a readable file and starts with the GGUF magic. */
export function checkModelFile(file: string): number {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new LocalModelNotGgufError(`${file} is not a file (a directory or a device): --model-file must name a .gguf model file`);
    size = stat.size;
  } catch (error) {
    if (error instanceof LocalModelNotGgufError) throw error;
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new LocalModelMissingError(`the model file ${file} does not exist: check --model-file (an absolute path, or relative to the current directory)`);
    if (code === 'EACCES') throw new LocalModelUnreadableError(`the model file ${file} cannot be reached by this process (uid ${process.getuid?.() ?? 'unknown'}): a folder on its path is not searchable; fix the permissions`);
    throw new LocalModelUnreadableError(`the model file ${file} cannot be examined: ${error instanceof Error ? error.message : String(error)}`);
  }
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new LocalModelUnreadableError(`the model file ${file} is not readable by this process (uid ${process.getuid?.() ?? 'unknown'}${typeof code === 'string' ? `, ${code}` : ''}): make it readable (chmod a+r), or run as a user that may read it`);
  }
  try {
    const magic = Buffer.alloc(4);
    const n = readSync(fd, magic, 0, 4, 0);
    if (n < 4 || magic.toString('latin1') !== GGUF_MAGIC) {
      throw new LocalModelNotGgufError(`${file} is not a GGUF model: it ${n < 4 ? `has only ${n} byte(s)` : `begins ${JSON.stringify(magic.toString('latin1'))} (hex ${magic.toString('hex')}), not "GGUF"`}; convert the model to GGUF (llama.cpp's convert_hf_to_gguf.py) — older GGML/GGJT files are not supported`);
    }
  } finally {
    closeSync(fd);
  }
  return size;
}

/** sha256 of a file, streamed (a model of many GiB is never held in memory). */
export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  } catch (error) {
    throw new LocalModelUnreadableError(`reading ${file} to hash it failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return hash.digest('hex');
}
