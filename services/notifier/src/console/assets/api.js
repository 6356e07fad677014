// The notifier's API, with its bearer token: asked once, kept in this tab's sessionStorage, sent
// as a header (never in a URL, never written anywhere else).

const KEY = 'gpualert.notifierToken';

export function token() {
  return sessionStorage.getItem(KEY);
}

export function setToken(value) {
  sessionStorage.setItem(KEY, value);
}

export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

/** Thrown when the server refuses the token: the app asks for it again. */
export class Unauthorized extends Error {}

/** One call; a refusal's own message (the API words it) becomes the error's. */
export async function call(method, path, body) {
  const headers = { authorization: `Bearer ${token() ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, cache: 'no-store', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (response.status === 401) throw new Unauthorized('the notifier refused the token');
  const type = response.headers.get('content-type') ?? '';
  const payload = type.includes('json') ? await response.json() : await response.text();
  if (!response.ok) {
    const message = typeof payload === 'object' && payload !== null ? (payload.message ?? payload.error) : String(payload);
    throw new Error(`${response.status}: ${message ?? 'request failed'}`);
  }
  return payload;
}

/** A file from the API (an incident's timeline) opened from a blob: the token stays in a header. */
export async function download(path, filename) {
  const response = await fetch(path, { headers: { authorization: `Bearer ${token() ?? ''}` }, cache: 'no-store' });
  if (response.status === 401) throw new Unauthorized('the notifier refused the token');
  if (!response.ok) throw new Error(`${response.status}: ${(await response.text()).slice(0, 300)}`);
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
