/** Reads from the bench server whose status is checked: a failed read must not pass for data. */

export interface TextResponse {
  status: number;
  text: string;
}

export async function getText(api: string, token: string, path: string): Promise<TextResponse> {
  const res = await fetch(api + path, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text() };
}

export async function getJson<T>(api: string, token: string, path: string): Promise<T> {
  const r = await getText(api, token, path);
  if (r.status >= 300) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as T;
}
