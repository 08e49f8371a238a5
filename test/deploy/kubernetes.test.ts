import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join, posix } from 'node:path'
import { promisify } from 'node:util'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { BIN, childEnv, startBin } from '../helpers/bin.js'
import { eventually, freePort } from '../helpers/http.js'

/**
 * deploy/kubernetes/ as an operator applies it: every manifest is valid
 * against the Kubernetes API's JSON schemas (kubernetes-models ships them, so
 * this runs offline), and the manifests agree with the binary and the image:
 * the ports the config listens on are the ports the pod declares, the probes
 * ask paths bearward serves on the admin port, the config path is the one the
 * Dockerfile sets, the user is the image's, selectors select the pods, and the
 * ConfigMap's config starts bearward and answers its probes.
 */

const execFileP = promisify(execFile)
const ROOT = 'deploy/kubernetes'
/** The uid of the `node` user in the official node images the Dockerfile builds on. */
const NODE_IMAGE_UID = 1000
/** A hash of `demo-secret` (config/gateway.yaml's demo): a valid value for `secret_hash`. */
const DEMO_HASH = 'scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U'

type Obj = Record<string, unknown>

interface Manifest {
  readonly file: string
  readonly doc: Obj
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return yamlFiles(path)
    return name.endsWith('.yaml') && name !== 'kustomization.yaml' ? [path] : []
  })
}

function manifestsIn(dir: string): Manifest[] {
  return yamlFiles(dir).flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`)
      return { file, doc: d.toJS() as Obj }
    }),
  )
}

function obj(value: unknown, what: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`)
  return value as Obj
}

function list(value: unknown): Obj[] {
  return Array.isArray(value) ? (value as Obj[]) : []
}

/** `kubernetes-models/<group>/<version>/<Kind>` for an object's apiVersion and kind. */
async function validate(doc: Obj): Promise<void> {
  const apiVersion = String(doc.apiVersion)
  const kind = String(doc.kind)
  const module = (await import(`kubernetes-models/${apiVersion}/${kind}`)) as Record<string, new (data: Obj) => { validate(): void }>
  const Model = module[kind]
  if (Model === undefined) throw new Error(`kubernetes-models has no ${apiVersion} ${kind}`)
  new Model(doc).validate()
}

function byKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.doc.kind === kind)
}

function podSpec(deployment: Obj): Obj {
  return obj(obj(obj(deployment.spec, 'spec').template, 'template').spec, 'pod spec')
}

function podLabels(deployment: Obj): Obj {
  return obj(obj(obj(obj(deployment.spec, 'spec').template, 'template').metadata, 'metadata').labels, 'labels')
}

function bearwardContainer(deployment: Obj): Obj {
  const c = list(podSpec(deployment).containers).find((x) => String(x.image).startsWith('bearward'))
  if (c === undefined) throw new Error('no bearward container')
  return c
}

function portOf(address: string): number {
  return Number(address.slice(address.lastIndexOf(':') + 1))
}

function selects(selector: Obj, labels: Obj): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v)
}

const dockerfile = readFileSync('Dockerfile', 'utf8')
const manyInstances = readFileSync('docs/many-instances.md', 'utf8')

for (const dir of [ROOT, `${ROOT}/sidecar`]) {
  t.test(`${dir}: every manifest is valid against the Kubernetes schemas`, async (t) => {
    const manifests = manifestsIn(dir).filter((m) => dirname(m.file) === dir)
    t.ok(manifests.length >= 3, `${dir} holds manifests`)
    for (const m of manifests) {
      await t.resolves(validate(m.doc), `${basename(m.file)}: ${String(m.doc.kind)} ${String(obj(m.doc.metadata, 'metadata').name)}`)
    }
    const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] }
    const files = [...new Set(manifests.map((m) => basename(m.file)))].sort()
    t.same([...kustomization.resources].sort(), files, 'kustomization.yaml lists every manifest, and only those')
  })

  t.test(`${dir}: the manifests agree with the binary and the image`, async (t) => {
    const manifests = manifestsIn(dir).filter((m) => dirname(m.file) === dir)
    const [deployment] = byKind(manifests, 'Deployment').map((m) => m.doc)
    if (deployment === undefined) throw new Error(`${dir} has no Deployment`)
    const container = bearwardContainer(deployment)
    const args = (container.args as string[]) ?? []
    t.equal(args[0], 'start', 'the container runs `bearward start`')
    const configPath = args[args.indexOf('-c') + 1] ?? ''
    t.match(dockerfile, new RegExp(`BEARWARD_CONFIG=${configPath.replace(/\//g, '\\/')}\\b`), 'the config path is the one the image sets')

    // The config comes from the ConfigMap mounted at the config file's directory, as a directory (no subPath: hot reload).
    const mount = list(container.volumeMounts).find((v) => v.mountPath === posix.dirname(configPath))
    t.ok(mount, 'the config directory is mounted')
    t.notOk(mount?.subPath, 'mounted without subPath, so ConfigMap changes reach the pod')
    const volume = list(podSpec(deployment).volumes).find((v) => v.name === mount?.name)
    const configMapName = obj(volume?.configMap, 'configMap volume').name
    const [configMap] = byKind(manifests, 'ConfigMap').filter((m) => obj(m.doc.metadata, 'metadata').name === configMapName)
    const configText = obj(configMap?.doc.data, 'ConfigMap data')[posix.basename(configPath)]
    t.type(configText, 'string', 'the ConfigMap holds the file the container is told to read')
    const config = parse(String(configText)) as Obj

    // Ports: what the config listens on is what the pod declares and the Services reach.
    const ports = list(container.ports)
    const http = ports.find((p) => p.name === 'http')
    const admin = ports.find((p) => p.name === 'admin')
    t.equal(http?.containerPort, portOf(String(config.listen)), '`listen` is the http containerPort')
    t.equal(admin?.containerPort, portOf(String(config.admin_listen)), '`admin_listen` is the admin containerPort')
    t.match(String(config.admin_listen), /^0\.0\.0\.0:/, 'the admin server listens on the pod IP, where the kubelet probes')
    for (const p of ports) t.match(dockerfile, new RegExp(`EXPOSE[^\\n]*\\b${String(p.containerPort)}\\b`), `the image exposes ${String(p.containerPort)}`)
    for (const probe of ['readinessProbe', 'livenessProbe'] as const) {
      const get = obj(obj(container[probe], probe).httpGet, `${probe}.httpGet`)
      t.equal(get.port, 'admin', `${probe} asks the admin port`)
      t.equal(get.path, probe === 'readinessProbe' ? '/readyz' : '/healthz', `${probe} path`)
    }
    for (const service of byKind(manifests, 'Service').map((m) => m.doc)) {
      const spec = obj(service.spec, 'service spec')
      t.ok(selects(obj(spec.selector, 'selector'), podLabels(deployment)), `Service ${String(obj(service.metadata, 'm').name)} selects the pods`)
      for (const p of list(spec.ports))
        t.ok(
          ports.some((c) => c.name === p.targetPort),
          `targetPort ${String(p.targetPort)} is a named container port`,
        )
    }
    for (const pdb of byKind(manifests, 'PodDisruptionBudget').map((m) => m.doc)) {
      const selector = obj(obj(obj(pdb.spec, 'spec').selector, 'selector').matchLabels, 'matchLabels')
      t.ok(selects(selector, podLabels(deployment)), 'the PodDisruptionBudget selects the pods')
      t.ok(Number(obj(deployment.spec, 'spec').replicas) > Number(obj(pdb.spec, 'spec').minAvailable), 'minAvailable leaves room to evict one pod')
    }

    // The image's user, non-root, a read-only root filesystem with a writable /tmp.
    t.match(dockerfile, /^USER node$/m, 'the image runs as node')
    const podSecurity = obj(podSpec(deployment).securityContext ?? {}, 'pod securityContext')
    const securityContext = obj(container.securityContext, 'container securityContext')
    t.equal(securityContext.runAsUser ?? podSecurity.runAsUser, NODE_IMAGE_UID, 'runs as the image user')
    t.equal(podSecurity.runAsNonRoot, true, 'runAsNonRoot')
    t.equal(securityContext.readOnlyRootFilesystem, true, 'read-only root filesystem')
    t.equal(securityContext.allowPrivilegeEscalation, false, 'no privilege escalation')
    t.ok(
      list(container.volumeMounts).some((v) => v.mountPath === '/tmp'),
      'a writable /tmp',
    )
    t.ok(obj(container.resources, 'resources').limits, 'resource limits are set')

    // No Secret is applied with the manifests: `kubectl apply -k` would replace the operator's own Secrets
    // with placeholders. Each Secret the pod names has its shape in examples/ and its `kubectl create` in the docs.
    t.same(
      byKind(manifests, 'Secret').map((m) => m.file),
      [],
      'the kustomization applies no Secret',
    )
    const exampleSecrets = new Set(byKind(manifestsIn(`${ROOT}/examples`), 'Secret').map((m) => obj(m.doc.metadata, 'm').name))
    const named = [
      ...list(podSpec(deployment).volumes).flatMap((v) => (v.secret === undefined ? [] : [String(obj(v.secret, 'secret').secretName)])),
      ...list(container.envFrom).map((e) => String(obj(e.secretRef, 'secretRef').name)),
    ]
    for (const name of named) {
      t.ok(exampleSecrets.has(name), `examples/secrets.yaml shows the Secret ${name}`)
      t.match(manyInstances, `kubectl create secret generic ${name}`, `docs/many-instances.md says how to create ${name}`)
    }
  })
}

/**
 * The ConfigMap's config with what a test machine must differ in: loopback port 0, a real key file, and the
 * memory store, or `redisPort`: the config's own store URL (and so its password) with its host:port moved there.
 */
async function runnable(dir: string, redisPort?: number): Promise<{ file: string; env: NodeJS.ProcessEnv; cleanup(): Promise<void> }> {
  const manifests = manifestsIn(dir).filter((m) => dirname(m.file) === dir)
  const [configMap] = byKind(manifests, 'ConfigMap')
  const config = parse(String(obj(configMap?.doc.data, 'data')['gateway.yaml'])) as Obj
  const tmp = await mkdtemp(join(tmpdir(), 'bearward-k8s-'))
  config.listen = '127.0.0.1:0'
  config.admin_listen = '127.0.0.1:0'
  if (redisPort !== undefined) {
    const store = obj(config.store, 'store')
    store.url = String(store.url).replace(/@[^@/:]+:\d+\//, `@127.0.0.1:${redisPort}/`)
  } else if (config.store !== undefined) config.store = 'memory'
  const as = config.authorization_server as Obj | undefined
  if (as !== undefined) {
    const { stdout } = await execFileP(process.execPath, [BIN, 'keys', 'generate'], { env: childEnv() })
    await writeFile(join(tmp, 'signing.jwk'), stdout)
    as.keys = [{ file: join(tmp, 'signing.jwk') }]
  }
  const file = join(tmp, 'gateway.yaml')
  await writeFile(file, stringify(config))
  return { file, env: { REDIS_PASSWORD: 'unused', ORDERS_SERVICE_SECRET_HASH: DEMO_HASH }, cleanup: () => rm(tmp, { recursive: true, force: true }) }
}

t.test('the ConfigMap configs pass check-config, and the gateway one starts and answers its probes', async (t) => {
  for (const dir of [ROOT, `${ROOT}/sidecar`]) {
    const r = await runnable(dir)
    t.teardown(r.cleanup)
    const check = await execFileP(process.execPath, [BIN, 'check-config', '-c', r.file], { env: childEnv(r.env) }).then(
      () => 0,
      (err: { code?: number; stderr?: string }) => {
        t.comment(err.stderr ?? '')
        return err.code ?? 1
      },
    )
    t.equal(check, 0, `${dir}: check-config accepts the ConfigMap's config`)
  }
  const r = await runnable(ROOT)
  const bin = await startBin(r.file, r.env)
  t.teardown(() => bin.stop())
  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${bin.admin}${path}`)
    t.equal(res.status, 200, `${path} answers 200 on the admin port`)
  }
  const token = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from('orders-service:demo-secret').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  t.equal(token.status, 200, "the ConfigMap's client gets a token with the secret whose hash the Secret holds")
})

t.test('check-config on the ConfigMap as shipped, keys not mounted: the missing file, not an ephemeral key', async (t) => {
  const [configMap] = byKind(
    manifestsIn(ROOT).filter((m) => dirname(m.file) === ROOT),
    'ConfigMap',
  )
  const tmp = await mkdtemp(join(tmpdir(), 'bearward-k8s-'))
  t.teardown(() => rm(tmp, { recursive: true, force: true }))
  const file = join(tmp, 'gateway.yaml')
  await writeFile(file, String(obj(configMap?.doc.data, 'data')['gateway.yaml']))
  const failure = await execFileP(process.execPath, [BIN, 'check-config', '-c', file], {
    env: childEnv({ REDIS_PASSWORD: 'unused', ORDERS_SERVICE_SECRET_HASH: DEMO_HASH }),
  }).then(
    () => null,
    (err: { code?: number; stderr?: string }) => err,
  )
  t.equal(failure?.code, 1, 'refused: the key file the Deployment mounts is not here')
  const said = failure?.stderr ?? ''
  t.match(said, /authorization_server\.keys\[0\]\.file: file not found: \/etc\/bearward-keys\/signing\.jwk/, 'names the missing key file')
  t.notMatch(said, /ephemeral/, 'and does not also claim an ephemeral key would be generated')
})

t.test('with-redis: the overlay adds the Redis the base config names, and bearward uses it with its password', async (t) => {
  const dir = `${ROOT}/with-redis`
  const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] }
  t.same(kustomization.resources, ['../', 'redis.yaml'], 'the base and the Redis')
  const manifests = manifestsIn(dir).filter((m) => dirname(m.file) === dir)
  for (const m of manifests) await t.resolves(validate(m.doc), `${String(m.doc.kind)} ${String(obj(m.doc.metadata, 'metadata').name)}`)
  const [redis] = byKind(manifests, 'Deployment').map((m) => m.doc)
  const [service] = byKind(manifests, 'Service').map((m) => m.doc)
  if (redis === undefined || service === undefined) throw new Error('with-redis has no Redis Deployment and Service')

  const base = manifestsIn(ROOT).filter((m) => dirname(m.file) === ROOT)
  const [bearward] = byKind(base, 'Deployment').map((m) => m.doc)
  const [configMap] = byKind(base, 'ConfigMap')
  const storeUrl = String(obj((parse(String(obj(configMap?.doc.data, 'data')['gateway.yaml'])) as Obj).store, 'store').url)
  const [, host, port] = /@([^@/:]+):(\d+)\//.exec(storeUrl) ?? []
  t.equal(obj(service.metadata, 'metadata').name, host, 'the Service is the host the store URL names')
  const servicePort = list(obj(service.spec, 'spec').ports)[0]
  t.equal(servicePort?.port, Number(port), 'on the port it names')
  t.ok(selects(obj(obj(service.spec, 'spec').selector, 'selector'), podLabels(redis)), 'the Service selects the Redis pod')
  const container = list(podSpec(redis).containers)[0] ?? {}
  t.ok(
    list(container.ports).some((p) => p.name === servicePort?.targetPort),
    'targetPort is a named container port',
  )
  const passwordRef = obj(obj(list(container.env).find((e) => e.name === 'REDIS_PASSWORD')?.valueFrom, 'valueFrom').secretKeyRef, 'secretKeyRef')
  const bearwardEnv = list(bearwardContainer(bearward ?? {}).envFrom).map((e) => obj(e.secretRef, 'secretRef').name)
  t.ok(bearwardEnv.includes(passwordRef.name), 'Redis reads its password from the Secret bearward reads')
  t.equal(passwordRef.key, 'REDIS_PASSWORD', 'the same variable the store URL uses')
  t.match(storeUrl, /\$\{REDIS_PASSWORD\}@/, 'the store URL carries it')
  const args = (container.args as string[]) ?? []
  t.equal(args[args.indexOf('--maxmemory-policy') + 1], 'noeviction', 'a revoked jti is never evicted')
  t.equal(args[args.indexOf('--requirepass') + 1], '$(REDIS_PASSWORD)', 'a password is required')

  // Run it: redis-server with the container's arguments as the kubelet expands them, and the base config at it.
  const password = randomBytes(12).toString('hex')
  const redisPort = await freePort()
  const data = await mkdtemp(join(tmpdir(), 'bearward-k8s-redis-'))
  const expanded = args.map((a) => (a === '$(REDIS_PASSWORD)' ? password : a === '/data' ? data : a))
  const server = spawn('redis-server', [...expanded, '--port', String(redisPort), '--bind', '127.0.0.1'], { stdio: 'ignore' })
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  server.once('error', (err) => t.fail(`redis-server: ${err.message} (apt-get install -y redis-server)`))
  t.teardown(async () => {
    server.kill('SIGKILL')
    await exited
    await rm(data, { recursive: true, force: true })
  })
  const accepts = (): Promise<boolean> =>
    new Promise((resolve) => {
      const sock = connect(redisPort, '127.0.0.1', () => {
        sock.destroy()
        resolve(true)
      })
      sock.once('error', () => resolve(false))
    })
  t.ok(await eventually(accepts, 5000), 'redis-server listens')
  const r = await runnable(ROOT, redisPort)
  t.teardown(r.cleanup)
  const bin = await startBin(r.file, { ...r.env, REDIS_PASSWORD: password })
  t.teardown(() => bin.stop())
  const ready = await fetch(`${bin.admin}/readyz`)
  t.equal(ready.status, 200, "ready on the overlay's Redis")
  t.match(await ready.json(), { store: 'redis' })
  const token = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from('orders-service:demo-secret').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  t.equal(token.status, 200, 'a token is issued through it')
})

t.test('the sidecar: the app container outlasts bearward on shutdown, within the grace period', async (t) => {
  const dir = `${ROOT}/sidecar`
  const manifests = manifestsIn(dir).filter((m) => dirname(m.file) === dir)
  const [deployment] = byKind(manifests, 'Deployment').map((m) => m.doc)
  if (deployment === undefined) throw new Error(`${dir} has no Deployment`)
  const [configMap] = byKind(manifests, 'ConfigMap')
  const config = parse(String(Object.values(obj(configMap?.doc.data, 'ConfigMap data'))[0])) as Obj
  const drainSec = Number(/^(\d+)s$/.exec(String(config.shutdown_timeout))?.[1] ?? Number.NaN)
  const pauseOf = (c: Obj): number => {
    const preStop = obj(obj(c.lifecycle, `${String(c.name)}.lifecycle`).preStop, `${String(c.name)}.lifecycle.preStop`)
    if (preStop.sleep !== undefined) return Number(obj(preStop.sleep, 'sleep').seconds)
    const command = obj(preStop.exec, 'exec').command as string[]
    return command[0] === 'sleep' ? Number(command[1]) : Number.NaN
  }
  const bearward = bearwardContainer(deployment)
  const apps = list(podSpec(deployment).containers).filter((c) => c !== bearward)
  t.ok(apps.length >= 1, 'the pod has an app container')
  const bearwardPause = pauseOf(bearward)
  for (const app of apps) {
    t.ok(
      pauseOf(app) >= bearwardPause + drainSec,
      `${String(app.name)} pauses ${pauseOf(app)}s: at least bearward's ${bearwardPause}s pause plus its ${drainSec}s drain`,
    )
    t.ok(Number(podSpec(deployment).terminationGracePeriodSeconds) > pauseOf(app), 'the grace period covers the pause')
  }
})
