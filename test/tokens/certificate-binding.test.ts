import type { KeyObject } from 'node:crypto'
import t from 'tap'
import { CertificateBindingMismatch } from '../../src/errors.js'
import type { ClientCertificate } from '../../src/http/client-certificate.js'
import { checkCertificateBinding, readConfirmation } from '../../src/tokens/certificate-binding.js'

/** The verifier the gateway calls for a certificate-bound token (RFC 8705 3). */

const A = 'A'.repeat(43)
const B = 'B'.repeat(43)

function cert(thumbprint: string, verified = true): ClientCertificate {
  return {
    der: Buffer.alloc(0),
    thumbprint,
    subjectDn: 'CN=x',
    subjectCanonical: '',
    san: { dns: [], uri: [], ip: [], email: [] },
    publicKey: {} as KeyObject,
    verified,
    source: 'tls',
  }
}

t.test('readConfirmation: what a cnf binds to, or false when it cannot be checked', async (t) => {
  t.same(readConfirmation(undefined), { jkt: null, x5t: null })
  t.same(readConfirmation({ jkt: 'k' }), { jkt: 'k', x5t: null })
  t.same(readConfirmation({ 'x5t#S256': A }), { jkt: null, x5t: A })
  for (const bad of [null, 'x', [], {}, { x5t: A }, { 'x5t#S256': 'short' }, { 'x5t#S256': 42 }, { jkt: '' }, { jwk: {} }]) {
    t.equal(readConfirmation(bad), false, JSON.stringify(bad))
  }
})

t.test('checkCertificateBinding', async (t) => {
  t.equal(checkCertificateBinding(undefined, null), null, 'a bearer token needs no certificate')
  t.equal(checkCertificateBinding({ jkt: 'k' }, null), null, 'a DPoP-bound token is checked by DPoP, not here')
  t.equal(checkCertificateBinding({ 'x5t#S256': A }, cert(A)), null, 'the bound certificate')
  t.equal(checkCertificateBinding({ 'x5t#S256': A }, cert(A, false)), null, 'possession is what counts: an unverified chain binds too')

  const none = checkCertificateBinding({ 'x5t#S256': A }, null)
  t.type(none, CertificateBindingMismatch)
  t.equal(none?.status, 401)
  t.equal(none?.error, 'invalid_token')
  t.equal(none?.description, 'The access token is bound to a client certificate: present it')

  const other = checkCertificateBinding({ 'x5t#S256': A }, cert(B))
  t.equal(other?.description, 'The access token is bound to another client certificate')
  t.equal((other?.constructor as { code?: string } | undefined)?.code, 'ERR_CERTIFICATE_BINDING')

  const unreadable = checkCertificateBinding({ 'x5t#S256': 'nope' }, cert(A))
  t.equal(unreadable?.description, 'The access token is bound to something this server cannot check')
})
