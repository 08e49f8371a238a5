import t from 'tap'
import { createHash, randomBytes, type Hash } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { routeConfig, startProxy, startUpstream } from './proxy-helpers.js'

/**
 * 100 MB each way through the proxy with the client, the gateway and the
 * upstream in this one process: if any hop buffered the body, RSS would grow
 * by about its size. (Checked by making the proxy buffer each direction in
 * turn: growth went to 74-205 MB; streaming stays within ~35 MB.)
 */

const TOTAL = 100 * 1024 * 1024
const CHUNK = 64 * 1024
// Buffering the body would hold all of it (100 MB and more); streaming holds a few chunks. The
// process's RSS also keeps pages the GC freed but did not return: on Node 24 a run now and then
// reads 65 MB where the usual is 3 MB (Node 20: about 30 MB), so the bound sits between the two
// readings a bounded stream gives and a buffered body's, not at a stream's typical figure.
const MAX_GROWTH = 85 * 1024 * 1024
const WARM_UP = 8 * 1024 * 1024

/**
 * Random chunks drawn from before any measurement starts, so the sender's own
 * allocations do not blur what the proxy holds. 251 of them (a prime) repeat
 * out of step with every power-of-two buffer size along the way, so a lost,
 * doubled or reordered chunk still changes the hash.
 */
const CHUNKS: readonly Buffer[] = Array.from({ length: 251 }, () => randomBytes(CHUNK))

/** `total` bytes produced as they are read, hashed as they go out. */
function source(hash: Hash, total = TOTAL): Readable {
  let produced = 0
  let index = 0
  return new Readable({
    read() {
      if (produced >= total) {
        this.push(null)
        return
      }
      const chunk = (CHUNKS[index++ % CHUNKS.length] as Buffer).subarray(0, Math.min(CHUNK, total - produced))
      produced += chunk.length
      hash.update(chunk)
      this.push(chunk)
    },
  })
}

/**
 * Two kinds of noise would otherwise blur what the hops hold: dropped chunks
 * pile up (tens of MB) until V8's external-memory pressure triggers a
 * collection, and the first transfer through a path grows the heap once (JIT
 * code, connections). So: a scavenge before every sample, and an 8 MB
 * warm-up through the same path before the window opens. Neither can hide a
 * proxy that holds the 100 MB: the warm-up is too small to leave room for it.
 */
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void
/** A scavenge: frees the young, dropped chunks in about a millisecond. */
const collect = (): void => gc({ type: 'minor' })

/** Samples RSS every 10 ms; `stop()` returns the largest growth over the starting value. */
function watchRss(): { stop(): number } {
  collect()
  const start = process.memoryUsage().rss
  let peak = start
  const timer = setInterval(() => {
    collect()
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 10)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, process.memoryUsage().rss)
      return peak - start
    },
  }
}

const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`

type Framing = 'content-length' | 'chunked'

/** PUT `total` bytes; resolves with what the upstream reported and the digest of what was sent. */
function upload(url: string, framing: Framing, total: number): Promise<{ reply: { bytes: number; sha256: string }; sent: string }> {
  const sent = createHash('sha256')
  return new Promise((resolve, reject) => {
    const headers = framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) }
    const req = httpRequest(`${url}/upload`, { method: 'PUT', agent: false, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ reply: JSON.parse(text) as { bytes: number; sha256: string }, sent: sent.digest('hex') }))
    })
    req.on('error', reject)
    pipeline(source(sent, total), req).catch(reject)
  })
}

/** GET a body of `total` bytes; resolves with the status, the byte count and the digest received. */
function download(url: string, total: number): Promise<{ status: number; bytes: number; digest: string }> {
  const received = createHash('sha256')
  let bytes = 0
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/download?bytes=${total}`, { agent: false }, (res) => {
      res.on('data', (c: Buffer) => {
        bytes += c.length
        received.update(c)
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, digest: received.digest('hex') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('100 MB uploads stream to the upstream with bounded memory', async (t) => {
  const up = await startUpstream((req, res) => {
    const hash = createHash('sha256')
    let bytes = 0
    req.on('data', (c: Buffer) => {
      bytes += c.length
      hash.update(c)
    })
    req.on('end', () => res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') })))
  })
  const gw = await startProxy([routeConfig({ upstream: up.url, maxBodyBytes: 200 * 1024 * 1024 })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  for (const framing of ['content-length', 'chunked'] as const) {
    await upload(gw.url, framing, WARM_UP)
    const rss = watchRss()
    const { reply, sent } = await upload(gw.url, framing, TOTAL)
    const growth = rss.stop()
    t.equal(reply.bytes, TOTAL, `${framing}: every byte arrived`)
    t.equal(reply.sha256, sent, `${framing}: the bytes arrived unchanged`)
    t.ok(growth < MAX_GROWTH, `${framing}: RSS grew ${mb(growth)} (< ${mb(MAX_GROWTH)})`)
  }
})

t.test('100 MB downloads stream to the client with bounded memory', async (t) => {
  const digests: string[] = []
  const up = await startUpstream((req, res) => {
    req.resume()
    const total = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('bytes'))
    const hash = createHash('sha256')
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) })
    pipeline(source(hash, total), res)
      .then(() => digests.push(hash.digest('hex')))
      .catch(() => {})
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  await download(gw.url, WARM_UP)
  const rss = watchRss()
  const result = await download(gw.url, TOTAL)
  const growth = rss.stop()
  t.equal(result.status, 200)
  t.equal(result.bytes, TOTAL, 'every byte arrived')
  t.equal(result.digest, digests.at(-1), 'the bytes arrived unchanged')
  t.ok(growth < MAX_GROWTH, `RSS grew ${mb(growth)} (< ${mb(MAX_GROWTH)})`)
})
