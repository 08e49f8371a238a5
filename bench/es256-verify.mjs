// The DPoP route's floor, its cryptographic part (issue #39): the CPU one
// ES256 proof verification takes with node:crypto, the way src/dpop/jws.ts
// makes it (a cached public KeyObject, IEEE P1363 signature), measured alone
// in this process: no HTTP, no store. Also the SHA-256 `ath` hash of an
// access token and the proof payload's decode and JSON parse, the other
// per-proof work, so the arithmetic of the floor can be shown.
//
//   node bench/es256-verify.mjs [--count N] [--runs R]
import { createHash, generateKeyPairSync, hash, sign, verify } from 'node:crypto'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { count: { type: 'string', default: '20000' }, runs: { type: 'string', default: '5' } } })
const COUNT = Number(values.count)
const RUNS = Number(values.runs)

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url')
const header = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicKey.export({ format: 'jwk' }) })
const token = 'x'.repeat(600)
const ath = createHash('sha256').update(token).digest('base64url')
const proofs = Array.from({ length: 64 }, (_, i) => {
  const input = `${header}.${b64({ jti: `j-${i}`, htm: 'GET', htu: 'http://127.0.0.1:1/api/items', iat: 1_800_000_000, ath })}`
  const sig = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
  return { input, sig, payload: input.slice(input.indexOf('.') + 1) }
})

/** CPU µs (user + system) per call of `fn` over COUNT calls. */
function cpuPerCall(fn) {
  const start = process.cpuUsage()
  for (let i = 0; i < COUNT; i++) fn(i)
  const used = process.cpuUsage(start)
  return (used.user + used.system) / COUNT
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const cases = {
  'ES256 verify (crypto.verify, cached KeyObject, P1363)': (i) => {
    const p = proofs[i & 63]
    if (!verify('sha256', Buffer.from(p.input, 'latin1'), { key: publicKey, dsaEncoding: 'ieee-p1363' }, p.sig)) throw new Error('verify failed')
  },
  'ath: SHA-256 of a 600-byte token, base64url': () => hash('sha256', token, 'base64url'),
  'payload: base64url decode + JSON.parse': (i) => JSON.parse(Buffer.from(proofs[i & 63].payload, 'base64url').toString('utf8')),
}
for (const fn of Object.values(cases)) cpuPerCall(fn) // warm-up
for (const [name, fn] of Object.entries(cases)) {
  const runs = Array.from({ length: RUNS }, () => cpuPerCall(fn))
  process.stdout.write(
    `${name}: ${median(runs).toFixed(2)} µs CPU per call (median of ${RUNS} runs of ${COUNT}; runs ${runs.map((r) => r.toFixed(1)).join(' ')})\n`,
  )
}
