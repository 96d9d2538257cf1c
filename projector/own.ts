// Records in the state are plain objects keyed by ids taken from events. A key such as
// "constructor" would find Object.prototype's member with `record[key]`; only own keys count.
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
