/**
 * `cnf` as the gateway reads it from any issuer (RFC 9449 6, RFC 8705 3.1):
 * JWT claims of the built-in or a trusted remote issuer and RFC 7662
 * introspection answers all go through identityFromClaims, so a bound token
 * from any of them is held to its key or certificate, and a binding we cannot
 * check is refused.
 */
import t from 'tap'
import { identityFromClaims } from '../../src/gateway/identity.js'

const JKT = '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I'
const base = { sub: 'alice', client_id: 'app', scope: 'orders:read', jti: 'j1' }

t.test("a remote issuer's claims with cnf.jkt give a bound identity; without cnf, a bearer one", async (t) => {
  t.equal(identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: { jkt: JKT } }, 2_000_000_000)?.jkt, JKT)
  t.equal(identityFromClaims('corp', 'https://idp.example.com', base, 2_000_000_000)?.jkt, null)
})

t.test('a cnf we cannot check (malformed, or no member we know) makes the token invalid rather than bearer', async (t) => {
  const of = (cnf: unknown) => identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf }, 2_000_000_000)
  t.equal(of({ 'x5t#S256': 'abc' }), undefined, 'an x5t#S256 that is no SHA-256 thumbprint')
  t.equal(of('jkt'), undefined)
  t.equal(of({ jkt: '' }), undefined)
  t.equal(of(null), undefined)
  t.equal(of({ kid: 'k1' }), undefined, 'a member we do not know')
})

t.test('a cnf.x5t#S256 gives a certificate-bound identity (RFC 8705 3.1), from any issuer', async (t) => {
  const x5t = 'A'.repeat(43)
  const bound = identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: { 'x5t#S256': x5t } }, 2_000_000_000)
  t.equal(bound?.x5t, x5t)
  t.equal(bound?.jkt, null)
  const both = identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: { jkt: JKT, 'x5t#S256': x5t } }, 2_000_000_000)
  t.same([both?.jkt, both?.x5t], [JKT, x5t], 'both bindings are kept, and both are checked')
})
