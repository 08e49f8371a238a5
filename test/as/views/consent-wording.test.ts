/**
 * The consent page's caution for a client nobody vetted says how bearward
 * knows it (issue #42): a client that registered itself "registered itself";
 * a metadata-document client did not: bearward read its document, and the
 * page names the host it was read from.
 */
import t from 'tap'
import { consentPage } from '../../../src/as/views/consent.js'

const base = {
  client: { name: 'Doc Client', metadata: { logoUri: null, policyUri: null, tosUri: null, clientUri: null } },
  scopes: [],
  signedInAs: 'Alice',
  csrf: 'c',
  action: 'consent' as const,
  continuation: { request: 'r' },
} as unknown as Parameters<typeof consentPage>[0]

t.test('a metadata-document client: read from its host, not "registered itself"', async (t) => {
  const page = consentPage({ ...base, selfRegistered: { redirectHost: 'tool.example.net', how: 'metadata_document', documentHost: 'docs.example.org' } })
  t.notMatch(page, /registered itself/)
  t.match(
    page,
    /This server read <bdi>Doc Client<\/bdi>’s description from <code><bdi>docs\.example\.org<\/bdi><\/code>, where it says it lives; nobody here has checked who runs it\./,
  )
  t.match(page, /you will be sent to <code><bdi>tool\.example\.net<\/bdi><\/code>/)
})

t.test('a client that registered itself still says so', async (t) => {
  const page = consentPage({ ...base, selfRegistered: { redirectHost: 'tool.example.net', how: 'registration' } })
  t.match(page, /<bdi>Doc Client<\/bdi> registered itself with this server; nobody here has checked who runs it/)
})
