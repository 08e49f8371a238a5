import { X509Certificate } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ipText } from '../../src/http/der.js'
import { canonicalDistinguishedName } from '../../src/http/distinguished-name.js'
import { certificateFromHeader, ClientCertificates, clientCertificateHeaderNames, parseXfcc, readClientCertificate } from '../../src/http/client-certificate.js'
import { TrustedProxies } from '../../src/http/trusted-proxies.js'
import { certificateAuthority, clientCertificate } from '../helpers/tls.js'

/** The client certificate both faces read (RFC 8705): parsed from DER, or from a trusted proxy's header. */

t.test('certificates', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bw-cc-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const ca = certificateAuthority(dir)
  const svc = clientCertificate(
    dir,
    'svc',
    {
      subject: '/C=GB/O=Acme, Inc./OU=Payments/CN=svc',
      san: ['DNS:svc.example.com', 'DNS:Alt.Example.com', 'URI:spiffe://example.com/svc', 'IP:10.0.0.7', 'IP:2001:db8::1', 'email:svc@example.com'],
    },
    ca,
  )
  const plain = clientCertificate(dir, 'plain', { subject: '/CN=plain' }, null)
  const svcDer = new X509Certificate(svc.cert).raw

  t.test('DER: thumbprint, RFC 4514 subject, SANs and key', async (t) => {
    const c = readClientCertificate(svcDer, true, 'tls')
    if (c === null) throw new Error('the certificate should parse')
    t.equal(c.thumbprint, Buffer.from(new X509Certificate(svc.cert).fingerprint256.replaceAll(':', ''), 'hex').toString('base64url'))
    t.equal(c.subjectDn, 'CN=svc,OU=Payments,O=Acme\\, Inc.,C=GB', 'last RDN first, `,` escaped')
    t.same(c.san, {
      dns: ['svc.example.com', 'Alt.Example.com'],
      uri: ['spiffe://example.com/svc'],
      ip: ['10.0.0.7', '2001:db8::1'],
      email: ['svc@example.com'],
    })
    t.ok(c.publicKey.equals(new X509Certificate(svc.cert).publicKey))
    t.equal(c.verified, true)
    const p = readClientCertificate(new X509Certificate(plain.cert).raw, false, 'tls')
    t.same(p?.san, { dns: [], uri: [], ip: [], email: [] }, 'no subjectAltName: empty lists')
  })

  t.test('a configured DN matches as a name: case, spacing and escapes do not matter; order and values do', async (t) => {
    const c = readClientCertificate(svcDer, true, 'tls')
    for (const same of [
      'CN=svc,OU=Payments,O=Acme\\, Inc.,C=GB',
      'cn=SVC, ou=payments, o=acme\\2c inc., c=gb',
      '2.5.4.3=svc,OU=Payments,O=Acme\\, Inc.,C=GB',
    ]) {
      t.equal(canonicalDistinguishedName(same), c?.subjectCanonical, same)
    }
    for (const other of [
      'CN=svc,OU=Payments,O=Acme,C=GB',
      'OU=Payments,CN=svc,O=Acme\\, Inc.,C=GB',
      'CN=svc,OU=Payments,O=Acme\\, Inc.',
      'CN=svc+OU=Payments,O=Acme\\, Inc.,C=GB',
    ]) {
      t.not(canonicalDistinguishedName(other), c?.subjectCanonical, other)
    }
    for (const bad of ['', 'svc', 'XX=svc', 'CN=svc\\', 'CN=#zz']) t.throws(() => canonicalDistinguishedName(bad), bad)
  })

  t.test('malformed DER is no certificate, never an exception', async (t) => {
    t.equal(readClientCertificate(Buffer.from('not a certificate'), true, 'tls'), null)
    t.equal(readClientCertificate(svcDer.subarray(0, svcDer.length - 10), true, 'tls'), null)
    // Every single-byte corruption of the certificate: parsed or refused, never thrown.
    let parsed = 0
    for (let i = 0; i < svcDer.length; i += 3) {
      const broken = Buffer.from(svcDer)
      broken[i] = (broken[i] as number) ^ 0xff
      if (readClientCertificate(broken, true, 'tls') !== null) parsed++
    }
    t.ok(parsed < svcDer.length / 3, 'most corruptions are refused')
  })

  t.test("a proxy's header: URL-encoded PEM, XFCC with one element, base64 DER", async (t) => {
    const escaped = encodeURIComponent(svc.cert)
    t.same(certificateFromHeader(escaped), svcDer, 'nginx $ssl_client_escaped_cert')
    t.same(certificateFromHeader(svcDer.toString('base64')), svcDer, 'HAProxy ssl_c_der,base64')
    t.same(
      certificateFromHeader(`By=spiffe://proxy;Hash=abc;Cert="${escaped}";Subject="CN=svc,O=Acme\\"; Inc.";URI=`),
      svcDer,
      'XFCC, quoted values with , ; and \\"',
    )
    t.equal(certificateFromHeader(`Hash=abc;Cert="${escaped}",Hash=def;Cert="${escaped}"`), null, 'two elements: hops we cannot tell apart')
    t.equal(certificateFromHeader(`Cert="${escaped}";cert="${escaped}"`), null, 'Cert given twice')
    t.equal(certificateFromHeader('Hash=abc;Subject="CN=svc"'), null, 'XFCC without Cert')
    t.equal(certificateFromHeader(`Cert="${escaped}`), null, 'unterminated quote')
    for (const junk of ['', '   ', '%E0%A4%A', '-----BEGIN CERTIFICATE-----!!!-----END CERTIFICATE-----', '=;,'])
      t.equal(certificateFromHeader(junk), null, junk)
    t.same(parseXfcc('a=1;b="x,y";c=3,d=4'), [
      new Map([
        ['a', '1'],
        ['b', 'x,y'],
        ['c', '3'],
      ]),
      new Map([['d', '4']]),
    ])
  })

  t.test('the header is believed only from a trusted proxy, once, and named for stripping', async (t) => {
    const certs = new ClientCertificates(new TrustedProxies(['10.0.0.0/8']), 'X-Client-Cert')
    t.same(certs.headerNames(), ['x-client-cert'])
    t.same(new ClientCertificates(new TrustedProxies([]), null).headerNames(), [])
    t.same(clientCertificateHeaderNames({ clientCertificateHeader: 'X-Forwarded-Client-Cert' }), ['x-forwarded-client-cert'])
    const req = (remoteAddress: string, value: string | string[]): IncomingMessage =>
      ({ headers: { 'x-client-cert': value }, socket: { remoteAddress } }) as unknown as IncomingMessage
    const escaped = encodeURIComponent(svc.cert)
    const fromProxy = certs.presented(req('10.1.2.3', escaped))
    t.equal(fromProxy?.source, 'proxy')
    t.equal(fromProxy?.verified, true, 'the proxy is trusted to have verified the chain')
    t.equal(certs.verified(req('::ffff:10.1.2.3', escaped))?.subjectDn, 'CN=svc,OU=Payments,O=Acme\\, Inc.,C=GB')
    t.equal(certs.presented(req('192.0.2.1', escaped)), null, 'another peer: ignored')
    t.equal(certs.presented(req('10.1.2.3', [escaped, escaped])), null, 'two copies of the header: not one statement')
    t.equal(certs.presented(req('10.1.2.3', 'garbage')), null)
  })

  t.test('two header lines that Node joins into one value are not believed, nor a value holding a certificate and more', async (t) => {
    const certs = new ClientCertificates(new TrustedProxies(['10.0.0.0/8']), 'X-Client-Cert')
    const escaped = encodeURIComponent(svc.cert)
    const other = new X509Certificate(plain.cert).raw.toString('base64')
    // What node:http makes of a client's line followed by the one a proxy added: one joined value, two raw lines.
    const joined = (lines: string[]): IncomingMessage =>
      ({
        headers: { 'x-client-cert': lines.join(', ') },
        rawHeaders: lines.flatMap((v, i) => [i === 0 ? 'X-Client-Cert' : 'x-client-cert', v]),
        socket: { remoteAddress: '10.1.2.3' },
      }) as unknown as IncomingMessage
    t.equal(certs.presented(joined([escaped, other])), null, "the client's line first, the proxy's after")
    t.equal(certs.presented(joined([escaped, escaped])), null, 'the same value twice is still two statements')
    t.equal(certs.presented(joined([escaped]))?.source, 'proxy', 'one line is believed')
    t.equal(certificateFromHeader(`${escaped}, ${other}`), null, 'URL-encoded PEM and more')
    t.equal(certificateFromHeader(`${svc.cert.replace(/\n/g, ' ')}, ${svc.cert.replace(/\n/g, ' ')}`), null, 'two PEMs')
    t.same(certificateFromHeader(` ${escaped} `), svcDer, 'spaces around one certificate are fine')
  })
})

t.test('IP addresses are written as certificates are compared', async (t) => {
  t.equal(ipText(Buffer.from([10, 0, 0, 7])), '10.0.0.7')
  t.equal(ipText(Buffer.from('20010db8000000000000000000000001', 'hex')), '2001:db8::1')
  t.equal(ipText(Buffer.from('20010db8000100000000000100000001', 'hex')), '2001:db8:1::1:0:1')
  t.equal(ipText(Buffer.alloc(16)), '::')
  t.equal(ipText(Buffer.from([1, 2, 3])), null)
})
