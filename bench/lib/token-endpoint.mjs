// Helpers for the token-endpoint scenarios.

export const FORM = 'application/x-www-form-urlencoded'

/**
 * POST `body` to `url` and return the JSON answer; throws with the status and
 * error body when it is not 200 (a benchmark must not measure failures).
 */
export async function postToken(url, body, authorization) {
  const headers = { 'content-type': FORM }
  if (authorization) headers.authorization = authorization
  const res = await fetch(url, { method: 'POST', headers, body })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`POST ${new URL(url).pathname} answered ${res.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/** Throws unless `token` is a compact JWT with the given header alg and typ. */
export function assertJwtAccessToken(token, { alg = 'ES256', typ = 'at+jwt' } = {}) {
  const parts = String(token).split('.')
  if (parts.length !== 3) throw new Error('access_token is not a compact JWT')
  const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'))
  if (header.alg !== alg || header.typ !== typ) throw new Error(`access_token header ${JSON.stringify(header)}, expected alg ${alg}, typ ${typ}`)
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'))
}

/** Run `fn(i)` for i in [0, n) with at most `limit` in flight. */
export async function pool(n, limit, fn) {
  let next = 0
  const out = new Array(n)
  const worker = async () => {
    while (next < n) {
      const i = next++
      out[i] = await fn(i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker))
  return out
}
