// The fastest peers on this machine, when installed: nginx as a plain
// reverse proxy and HAProxy verifying every JWT with its own converters.
// Each runs in the foreground as a child of the runner, from a config written
// into the run's work directory, on 127.0.0.1 and a free port: never the
// system service, never its config.
//
// nginx: one process (`master_process off`, `worker_processes 1`), keep-alive
// to the client and to the upstream. HAProxy: one thread (`nbthread 1`), the
// checks its documentation shows for JWTs (configuration.txt, jwt_verify):
// alg and typ in the header, the ES256 signature (`jwt_verify`, on every
// request: HAProxy has no cache of verified tokens), iss, aud, exp and the
// scope in the payload; a refusal is 401 (403 for the scope) and nothing is
// forwarded.
import { execFileSync, spawnSync } from 'node:child_process'
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, httpProbe, startProcess } from './spawn.mjs'

/** The path of `name` on PATH or in the sbin directories Debian installs it to, or null. */
function findProgram(name) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin']
  for (const dir of dirs) {
    if (!dir) continue
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // not here
    }
  }
  return null
}

/** `{ path, version }` of an installed program, or `{ skip }` saying how to install it. */
export function findPeer(name) {
  const path = findProgram(name)
  if (!path) return { skip: `${name} is not installed (Debian/Ubuntu: apt-get install -y ${name}; the bench runs it on its own config, not as a service)` }
  // nginx prints its version on stderr, HAProxy on stdout.
  const r = spawnSync(path, ['-v'], { encoding: 'utf8', timeout: 10_000 })
  const version = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0].trim()
  return r.status === 0 ? { path, version } : { skip: `${path} -v failed: ${version || r.error?.message}` }
}

/**
 * nginx as a reverse proxy to `upstreamUrl` with one worker. The client keeps
 * its connection for the whole run (keepalive_requests), as with every other
 * target; upstream connections are pooled (`keepalive`, HTTP/1.1, no
 * Connection header).
 */
export async function startNginx(ctx, { path, upstreamUrl, name = 'nginx' }) {
  const port = await freePort()
  const dir = join(ctx.workDir, name)
  mkdirSync(join(dir, 'tmp'), { recursive: true })
  const up = new URL(upstreamUrl)
  const conf = `# Written by bench/lib/native-peers.mjs for one benchmark run.
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; multi_accept on; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  keepalive_timeout 65s;
  keepalive_requests 10000000;
  upstream bench_upstream {
    server ${up.host};
    keepalive 128;
    keepalive_requests 10000000;
    keepalive_timeout 65s;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering on;
    }
  }
}
`
  const file = join(dir, 'nginx.conf')
  writeFileSync(file, conf)
  const url = `http://127.0.0.1:${port}`
  const handle = await startProcess({
    name,
    command: path,
    args: ['-p', dir, '-c', file],
    logDir: ctx.workDir,
    measured: true,
    probe: () => httpProbe(`${url}/`).then((u) => u && url),
  })
  return ctx.track({ ...handle, configFile: file })
}

/**
 * HAProxy with one thread in front of `upstreamUrl`, verifying every bearer
 * JWT: ES256 against the public key in `publicKeyPem` (a PEM file), typ
 * at+jwt, `issuer`, `audience` (a string claim, as the bench's tokens carry
 * it), exp in the future, and `scope` among the space-separated scopes.
 */
export async function startHaproxyJwt(ctx, { path, upstreamUrl, publicKeyPem, issuer, audience, scope, name = 'haproxy-jwt' }) {
  const port = await freePort()
  const dir = join(ctx.workDir, name)
  mkdirSync(dir, { recursive: true })
  const up = new URL(upstreamUrl)
  const scopeRegex = `(^| )${scope.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( |$)`
  const conf = `# Written by bench/lib/native-peers.mjs for one benchmark run.
global
  nbthread 1
  maxconn 4096
  log stderr format raw local0 err

defaults
  mode http
  log global
  option http-keep-alive
  http-reuse always
  timeout connect 5s
  timeout client 65s
  timeout server 65s
  timeout http-keep-alive 65s

frontend bench
  bind 127.0.0.1:${port}
  # The token: Bearer scheme only.
  http-request set-var(txn.bearer) http_auth_bearer
  http-request deny deny_status 401 unless { var(txn.bearer) -m found }
  # JOSE header: alg ES256 (no other accepted), typ at+jwt (RFC 9068).
  http-request set-var(txn.alg) var(txn.bearer),jwt_header_query('$.alg')
  http-request deny deny_status 401 unless { var(txn.alg) -m str ES256 }
  http-request deny deny_status 401 unless { var(txn.bearer),jwt_header_query('$.typ') -m str at+jwt }
  # The signature, on every request.
  http-request deny deny_status 401 unless { var(txn.bearer),jwt_verify(txn.alg,"${publicKeyPem}") -m int 1 }
  # Claims: issuer, audience, expiry, scope.
  http-request deny deny_status 401 unless { var(txn.bearer),jwt_payload_query('$.iss') -m str ${issuer} }
  http-request deny deny_status 401 unless { var(txn.bearer),jwt_payload_query('$.aud') -m str ${audience} }
  http-request set-var(txn.exp) var(txn.bearer),jwt_payload_query('$.exp','int')
  http-request deny deny_status 401 unless { date(),neg,add(txn.exp) -m int gt 0 }
  http-request deny deny_status 403 unless { var(txn.bearer),jwt_payload_query('$.scope') -m reg '${scopeRegex}' }
  default_backend upstream

backend upstream
  server up ${up.host}
`
  const file = join(dir, 'haproxy.cfg')
  writeFileSync(file, conf)
  try {
    execFileSync(path, ['-c', '-f', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 })
  } catch (err) {
    throw new Error(`${path} -c -f ${file} refused the config:\n${err.stderr ?? err.message}`)
  }
  const url = `http://127.0.0.1:${port}`
  // No token: 401 once it listens.
  const handle = await startProcess({
    name,
    command: path,
    args: ['-db', '-f', file],
    logDir: ctx.workDir,
    measured: true,
    probe: () => httpProbe(`${url}/`, 401).then((u) => u && url),
  })
  return ctx.track({ ...handle, configFile: file })
}

/**
 * Throws unless `url` answers 200 to `valid` and refuses each of `refused`
 * (`{ what, token, status }`): a peer that let a bad token through would
 * be measured doing less than bearward does.
 */
export async function checkRefusals(url, valid, refused) {
  const get = async (token) => {
    const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(5000) })
    await res.arrayBuffer()
    return res.status
  }
  const ok = await get(valid)
  if (ok !== 200) throw new Error(`${url}: a valid token got ${ok}, not 200`)
  for (const r of refused) {
    const status = await get(r.token)
    if (status !== r.status) throw new Error(`${url}: ${r.what} got ${status}, not ${r.status}`)
  }
}
