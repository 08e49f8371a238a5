/**
 * Mutual TLS through bin/bearward: the App's own listener asks for client
 * certificates (tls.client_ca), a tls_client_auth client gets a token bound
 * to its certificate, a certificate of another CA is refused, and a reload
 * that turns `client_certificates` to `required` makes the next handshakes
 * without a certificate fail (node:tls reads it per connection).
 */
import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:tls'
import t from 'tap'
import { decodeJwt } from 'jose'
import { Agent, fetch as undiciFetch } from 'undici'
import { certificateThumbprint } from '../../src/http/client-certificate.js'
import { asConfig } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { configYaml } from '../helpers/config-tree.js'
import { eventually, freePort } from '../helpers/http.js'
import { certificateAuthority, clientCertificate, type IssuedCertificate, selfSignedCert } from '../helpers/tls.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('bin/bearward asks for client certificates; a reload makes them required', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig('')
  const server = selfSignedCert(cfg.dir, 'server')
  const ca = certificateAuthority(cfg.dir, 'ca')
  const rogue = certificateAuthority(cfg.dir, 'rogue')
  const names = { subject: '/CN=payments', san: ['DNS:payments.example.com'] }
  const svc = clientCertificate(cfg.dir, 'svc', names, ca)
  const forged = clientCertificate(cfg.dir, 'forged', names, rogue)
  const tls = { cert_file: server.certFile, key_file: server.keyFile, client_ca: ca.certFile, client_certificates: 'optional' }
  const config = await asConfig({ port, upstream: up.url, override: { public_url: `https://127.0.0.1:${port}`, tls } })
  config.authorization_server.clients.push({
    client_id: 'payments',
    type: 'confidential',
    token_endpoint_auth_method: 'tls_client_auth',
    tls_client_auth_san_dns: 'payments.example.com',
    grant_types: ['client_credentials'],
    scopes: ['orders:read'],
    tls_client_certificate_bound_access_tokens: true,
  })
  await writeFile(cfg.file, configYaml(config))
  const bin = await startBin(cfg.file)
  const agent = (cert: IssuedCertificate | null): Agent =>
    new Agent({ connect: { ca: server.cert, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }) } })
  const agents = { svc: agent(svc), forged: agent(forged), none: agent(null) }
  t.teardown(async () => {
    await Promise.all(Object.values(agents).map((a) => a.close()))
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const tokenWith = async (a: Agent): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await undiciFetch(`${bin.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=payments',
      dispatcher: a,
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  const ok = await tokenWith(agents.svc)
  t.equal(ok.status, 200, JSON.stringify(ok.body))
  t.same(decodeJwt(String(ok.body.access_token)).cnf, { 'x5t#S256': certificateThumbprint(new X509Certificate(svc.cert).raw) })
  t.equal((await tokenWith(agents.forged)).status, 401, 'another CA: refused at /token, the handshake allowed (optional)')
  t.equal((await tokenWith(agents.none)).status, 401, 'no certificate: refused at /token, the handshake allowed')

  const handshake = (cert: IssuedCertificate | null): Promise<boolean> =>
    new Promise((resolve) => {
      const s = connect(
        { host: '127.0.0.1', port, ca: server.cert, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }), ALPNProtocols: ['http/1.1'] },
        () => s.write('GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      )
      let text = ''
      s.on('data', (d: Buffer) => (text += d.toString('latin1')))
      s.on('error', () => resolve(false))
      s.on('close', () => resolve(text.startsWith('HTTP/1.1 200')))
    })
  t.equal(await handshake(null), true, 'optional: a browser without a certificate is served')

  await writeFile(cfg.file, configYaml({ ...config, tls: { ...tls, client_certificates: 'required' } }))
  t.ok(await eventually(async () => !(await handshake(null)), 10_000), 'after the reload a handshake without a certificate fails')
  t.equal(await handshake(forged), false, 'and one with a certificate of another CA')
  t.equal(await handshake(svc), true, 'a certificate of client_ca still passes')
})
