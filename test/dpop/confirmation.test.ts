/**
 * `cnf.jkt` as the gateway reads it from any issuer (RFC 9449 6): JWT claims
 * of the built-in or a trusted remote issuer and RFC 7662 introspection
 * answers all go through identityFromClaims, so a bound token from any of
 * them is held to its key, and a binding we cannot check is refused.
 */
import t from 'tap'
import { confirmationJkt } from '../../src/dpop/thumbprint.js'
import { identityFromClaims } from '../../src/gateway/identity.js'

const JKT = '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I'
const base = { sub: 'alice', client_id: 'app', scope: 'orders:read', jti: 'j1' }

t.test("a remote issuer's claims with cnf.jkt give a bound identity; without cnf, a bearer one", async (t) => {
  t.equal(identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: { jkt: JKT } }, 2_000_000_000)?.jkt, JKT)
  t.equal(identityFromClaims('corp', 'https://idp.example.com', base, 2_000_000_000)?.jkt, null)
})

t.test('a cnf we cannot check (mTLS x5t#S256, or malformed) makes the token invalid rather than bearer', async (t) => {
  t.equal(identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: { 'x5t#S256': 'abc' } }, 2_000_000_000), undefined)
  t.equal(identityFromClaims('corp', 'https://idp.example.com', { ...base, cnf: 'jkt' }, 2_000_000_000), undefined)
  t.equal(confirmationJkt({ jkt: '' }), false)
  t.equal(confirmationJkt(null), false)
  t.equal(confirmationJkt(undefined), null)
})
