// JSON.parse keeps the last of two equal keys, so `{"user_id":"a","user_id":"b"}` would be read as "b" by this service
// and as "a" by a proxy, a WAF or a log pipeline that keeps the first: a request would mean different things to
// different readers. Request bodies with a repeated key are refused instead (400).

/**
 * The first key that appears twice in one object of `text`, which must be JSON that JSON.parse accepted; undefined when
 * none does. Keys are compared after unescaping (`"a"` and `"\u0061"` are the same key). One pass over the text.
 */
export function findDuplicateKey(text: string): string | undefined {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const keys = open.at(-1);
      if (expectingKey && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return key;
        keys.add(key);
      }
      expectingKey = false;
      i = end;
    } else if (c === "{") {
      open.push(new Set());
      expectingKey = true;
    } else if (c === "[") {
      open.push(null);
      expectingKey = false;
    } else if (c === "}" || c === "]") {
      open.pop();
    } else if (c === ",") {
      expectingKey = open.at(-1) != null;
    }
  }
  return undefined;
}
