/**
 * The fault suite's rig: real redis-servers, TCP relays, bearward binaries
 * and an upstream that records what reached it, plus a bounded load driver
 * that timestamps every request, so tests can state figures (time to fail
 * closed, time to recover, requests forwarded with a revoked token).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfigYaml, DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { startRedis, type TestRedis } from '../helpers/redis.js'
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js'
import { startUpstream, type SeenRequest } from '../helpers/upstream.js'
import { basic } from '../helpers/client-auth.js'
import type { ConfigTree } from '../helpers/config-tree.js'
import { freePort, eventually } from '../helpers/http.js'

/** A route beside the default `orders` (fail closed) that fails open. */
export const OPEN_ROUTE = (upstream: string): ConfigTree[] => [
  { name: 'orders-open', match: { path: '/open-orders' }, upstream, scopes: { GET: ['orders:read'] }, store_unavailable: 'open' },
]

export interface Instance {
  bin: RunningBin
  /** The relay between this instance and Redis, when it has one. */
  relay: TcpRelay | null
  file: string
}

export interface Rig {
  redis: TestRedis
  upstream: { url: string; seen: SeenRequest[] }
  instances: Instance[]
  /** A fresh access token (client credentials, `orders:read`) issued by `via`. */
  token(via: Instance): Promise<string>
  /** Revoke `token` at `via` (RFC 7009); resolves when it answered 200. */
  revoke(via: Instance, token: string): Promise<void>
  /** One GET with the token; resolves to the status. */
  status(via: Instance, path: string, token: string): Promise<number>
  /** GET /readyz of the instance; resolves to the status. */
  ready(via: Instance): Promise<number>
  close(): Promise<void>
}

/**
 * One Redis, and one bearward per entry of `via` (`relay`: through its own
 * TCP relay; `direct`), all one issuer with one signing key, one upstream.
 */
export async function startRig(via: Array<'relay' | 'direct'>, extraRoutes: (upstream: string) => ConfigTree[] = () => []): Promise<Rig> {
  const redis = await startRedis({ own: true })
  const up = await startUpstream('orders')
  const cfg = await tempConfig('')
  const relays: TcpRelay[] = []
  const instances: Instance[] = []
  const agent = new Agent({ connections: 8 })
  const close = async (): Promise<void> => {
    await Promise.allSettled(instances.map((i) => i.bin.stop()))
    await Promise.allSettled(relays.map((r) => r.close()))
    await agent.close()
    await up.close()
    await redis.stop()
    await cfg.cleanup()
  }
  try {
    const keyFile = join(cfg.dir, 'signing.jwk')
    await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
    const ports = await Promise.all(via.map(() => freePort()))
    for (const [i, how] of via.entries()) {
      const relay = how === 'relay' ? await startTcpRelay(redis.port) : null
      if (relay) relays.push(relay)
      const yaml = await asConfigYaml({
        port: ports[i]!,
        upstream: up.url,
        store: relay ? relay.url : redis.url,
        routes: extraRoutes(up.url),
        override: oneIssuer(ports[0]!, keyFile),
      })
      const file = join(cfg.dir, `g${i + 1}.yaml`)
      await writeFile(file, yaml)
      // A generous start bound: the fault suite runs beside everything else on a busy machine.
      instances.push({ bin: await startBin(file, {}, 30_000), relay, file })
    }
  } catch (err) {
    await close()
    throw err
  }
  const form = async (url: string, body: Record<string, string>): Promise<{ status: number; text: string }> => {
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: basic('service', DEMO_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body).toString(),
    })
    return { status: res.statusCode, text: await res.body.text() }
  }
  return {
    redis,
    upstream: up,
    instances,
    async token(at) {
      const res = await form(`${at.bin.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' })
      if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`)
      return (JSON.parse(res.text) as { access_token: string }).access_token
    },
    async revoke(at, token) {
      const res = await form(`${at.bin.url}/revoke`, { token, token_type_hint: 'access_token' })
      if (res.status !== 200) throw new Error(`revoke: ${res.status} ${res.text}`)
    },
    async status(at, path, token) {
      const res = await request(`${at.bin.url}${path}`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } })
      await res.body.dump()
      return res.statusCode
    },
    async ready(at) {
      const res = await request(`${at.bin.admin}/readyz`, { dispatcher: agent })
      await res.body.dump()
      return res.statusCode
    },
    close,
  }
}

/** One request of a load run. */
export interface Shot {
  /** Which token it carried (a key of the `tokens` given to drive()). */
  name: string
  seq: number
  path: string
  /** performance.now() when sent and when answered. */
  sentAt: number
  doneAt: number
  /** HTTP status, or 0 when the request failed without an answer. */
  status: number
}

export interface Load {
  readonly shots: readonly Shot[]
  /** Resolve with the first answered shot for which `pred` holds (past or future), or reject after `ms`. */
  first(pred: (s: Shot) => boolean, ms: number): Promise<Shot>
  /** Resolve once `n` more shots than now have been answered, or reject after `ms`. */
  more(n: number, ms: number): Promise<void>
  /** Stop sending; resolves when every worker has returned. */
  stop(): Promise<Shot[]>
}

/**
 * Drive GETs at `target` from `workers` concurrent loops, cycling through the
 * tokens. Bounded: stops by itself after `maxRequests` or `maxMs`. Each
 * request's path is `${prefix}/${name}/${seq}`, so the upstream's record
 * tells which token and which request reached it.
 */
export function drive(
  target: Instance,
  tokens: Record<string, string>,
  options: { prefix?: string; workers?: number; maxRequests?: number; maxMs?: number } = {},
): Load {
  const prefix = options.prefix ?? '/orders'
  const maxRequests = options.maxRequests ?? 50_000
  const started = performance.now()
  const maxMs = options.maxMs ?? 30_000
  const names = Object.keys(tokens)
  const agent = new Agent({ connections: options.workers ?? 4, keepAliveTimeout: 10_000 })
  const shots: Shot[] = []
  const waiters = new Set<() => void>()
  let seq = 0
  let stopped = false
  let closed: Promise<Shot[]> | null = null
  const worker = async (): Promise<void> => {
    while (!stopped && seq < maxRequests && performance.now() - started < maxMs) {
      const n = seq++
      const name = names[n % names.length]!
      const path = `${prefix}/${name}/${n}`
      const sentAt = performance.now()
      let status = 0
      try {
        const res = await request(`${target.bin.url}${path}`, { dispatcher: agent, headers: { authorization: `Bearer ${tokens[name]}` } })
        await res.body.dump()
        status = res.statusCode
      } catch {
        status = 0
      }
      shots.push({ name, seq: n, path, sentAt, doneAt: performance.now(), status })
      for (const w of [...waiters]) w()
    }
  }
  const running = Promise.all(Array.from({ length: options.workers ?? 4 }, () => worker()))
  const waitFor = <T>(check: () => T | undefined, ms: number, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const now = check()
      if (now !== undefined) return resolve(now)
      const timer = setTimeout(() => {
        waiters.delete(onShot)
        reject(new Error(`${what} not seen within ${ms} ms (${shots.length} requests answered)`))
      }, ms)
      const onShot = (): void => {
        const v = check()
        if (v === undefined) return
        clearTimeout(timer)
        waiters.delete(onShot)
        resolve(v)
      }
      waiters.add(onShot)
      void running.then(() => {
        if (!waiters.has(onShot)) return
        clearTimeout(timer)
        waiters.delete(onShot)
        const v = check()
        if (v !== undefined) resolve(v)
        else reject(new Error(`${what}: the load ended first (${shots.length} requests answered)`))
      })
    })
  return {
    shots,
    first: (pred, ms) => waitFor(() => shots.find(pred), ms, 'shot'),
    more: (n, ms) => {
      const goal = shots.length + n
      return waitFor(() => (shots.length >= goal ? true : undefined), ms, `${n} more requests`).then(() => undefined)
    },
    stop() {
      stopped = true
      closed ??= running.then(() => agent.close()).then(() => shots)
      return closed
    },
  }
}

/** The request sequence numbers (of token `name`) that reached the upstream. */
export function forwardedSeqs(seen: readonly SeenRequest[], prefix: string, name: string): Set<number> {
  const out = new Set<number>()
  const head = `${prefix}/${name}/`
  for (const s of seen) if (s.url.startsWith(head)) out.add(Number(s.url.slice(head.length)))
  return out
}

/** Poll `check` until it holds, at most `ms`; resolves to performance.now() when it first held, or rejects. */
export async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  let heldAt = 0
  const held = await eventually(
    async () => {
      if (!(await check())) return false
      heldAt = performance.now()
      return true
    },
    ms,
    10,
  )
  if (!held) throw new Error(`${what}: not within ${ms} ms`)
  return heldAt
}
