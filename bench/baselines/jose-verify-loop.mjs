// Baseline for the cache-cold JWT scenario: how many distinct tokens one
// process verifies per second with jose.jwtVerify (the library bearward uses,
// same options: ES256 KeyObject, iss, aud, typ at+jwt, exp required), awaited
// one after another. Also reports a raw node:crypto ECDSA verify loop, the
// floor under any JWT library.
//
// `node jose-verify-loop.mjs TOKENS_FILE PUBLIC_JWK_FILE ISSUER AUDIENCE DURATION_SEC [WARMUP_SEC]`
import { createPublicKey, verify } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { jwtVerify } from 'jose'

const [tokensFile, jwkFile, issuer, audience, durationArg, warmupArg = '1'] = process.argv.slice(2)
const tokens = readFileSync(tokensFile, 'utf8').split('\n').filter(Boolean)
const key = createPublicKey({ key: JSON.parse(readFileSync(jwkFile, 'utf8')), format: 'jwk' })
const options = { issuer, audience, typ: 'at+jwt', algorithms: ['ES256'], requiredClaims: ['exp'], clockTolerance: 30 }

async function joseFor(ms) {
  const end = performance.now() + ms
  let n = 0
  while (performance.now() < end) {
    for (let k = 0; k < 100; k++) {
      await jwtVerify(tokens[n % tokens.length], key, options)
      n++
    }
  }
  return n
}

function rawFor(ms) {
  const end = performance.now() + ms
  let n = 0
  while (performance.now() < end) {
    const t = tokens[n % tokens.length]
    const dot = t.lastIndexOf('.')
    if (!verify('sha256', Buffer.from(t.slice(0, dot)), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(t.slice(dot + 1), 'base64url')))
      throw new Error('bad signature')
    n++
  }
  return n
}

const durationMs = Number(durationArg) * 1000
await joseFor(Number(warmupArg) * 1000)
let t0 = performance.now()
const joseCount = await joseFor(durationMs)
const joseSec = (performance.now() - t0) / 1000
t0 = performance.now()
const rawCount = rawFor(Math.min(durationMs, 2000))
const rawSec = (performance.now() - t0) / 1000
process.stdout.write(
  JSON.stringify({
    tokens: tokens.length,
    jose: { count: joseCount, rps: joseCount / joseSec, usPerVerify: (joseSec * 1e6) / joseCount },
    raw: { count: rawCount, rps: rawCount / rawSec, usPerVerify: (rawSec * 1e6) / rawCount },
  }) + '\n',
)
