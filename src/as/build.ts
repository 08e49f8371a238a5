/**
 * Build the authorization server's per-Runtime context from the validated
 * config: lookups by client id and username are maps, computed once.
 */
import { AuthorizationDetailsTypes } from './authorization-details/authorization-details.js'
import type { AuthorizationServerConfig } from '../config/validated-config.js'
import type { FaceDeps } from '../context.js'
import { SecretVerifier } from '../crypto/secret.js'
import { DpopVerifier } from '../dpop/verify-proof.js'
import type { KeySet } from '../keys/keyset.js'
import { JwtVerifier } from '../tokens/verify-jwt.js'
import { ClientDirectory } from './client-directory.js'
import { AssertionIssuers } from './assertion-issuers.js'
import { ClientKeySets } from './client-keys.js'
import { TrustedTokens } from './trusted-tokens.js'
import type { AsContext } from './context.js'
import { ClientAddress } from '../http/trusted-proxies.js'
import { UpstreamProviders } from './identity-providers/providers.js'
import { TotpSecrets } from './totp/secrets.js'
import { PersonDirectory } from './people/directory.js'
import { SessionEnds } from './sessions/session-ends.js'
import { BackchannelLogoutDelivery } from './backchannel-logout/deliver.js'
import { CredentialChanges } from './credential-changes.js'
import { deskFor } from './approvals/desk.js'
import { ApprovalNotifier, TOP_LEVEL_TARGET } from './approvals/notify.js'
import { approvalPageUrl } from './interaction/approval-next.js'
import { CibaPings } from './ciba/ping.js'
import { CibaRuntime } from './ciba/runtime.js'
import { ClientPushes } from './client-push.js'
import { adminAudience } from '../admin/audience.js'

/**
 * The {@link AsContext} of one Runtime. `issuer` is exactly public_url
 * (RFC 8414 2); `resources` (RFC 8707) are the audiences the routes accept
 * (each route's `audience` and RFC 9728 resource identifier), plus the
 * issuer, which is the default audience.
 */
export function buildAsContext(deps: FaceDeps & { as: AuthorizationServerConfig; keys: KeySet }): AsContext {
  const { config, ownIssuer } = deps
  // buildFaceDeps makes it whenever there are keys; an AS without it would verify its tokens some other way.
  if (ownIssuer === null) throw new Error('buildAsContext: FaceDeps has keys but no ownIssuer (build them with buildFaceDeps)')
  const resources = new Set<string>([config.publicUrl, ...config.routes.flatMap((r) => r.audiences)])
  // The admin API's audience (docs/admin.md): its tokens are good nowhere else.
  if (config.adminApi) resources.add(adminAudience(config.publicUrl))
  const clients = new Map(deps.as.clients.map((c) => [c.clientId, c]))
  const users = new Map(deps.as.users.map((u) => [u.username, u]))
  const directory = new ClientDirectory(clients, deps.as, deps.store, deps.clock, null, config.adminApi != null)
  const clientKeys = new ClientKeySets(deps.clock, deps.log, deps.as.clientIdMetadataDocuments)
  const assertionIssuers = new AssertionIssuers(deps.as.assertionIssuers, deps.clock, deps.log, config.gateway.clockSkewSec)
  // Only a token exchange reads other issuers' tokens here: without a client that may exchange, nothing is fetched.
  const exchanges = deps.as.clients.some((c) => c.tokenExchange !== undefined)
  const trustedTokens = new TrustedTokens(exchanges ? config.issuers : [], deps.clock, deps.log)
  const upstream = new UpstreamProviders(deps.as.identityProviders, deps.log, deps.clock)
  upstream.start()
  const sessionEnds = new SessionEnds(deps.log)
  const findClient = (clientId: string): ReturnType<AsContext['findClient']> => directory.find(clientId)
  const backchannelLogout = new BackchannelLogoutDelivery({
    as: deps.as,
    store: deps.store,
    log: deps.log,
    metrics: deps.metrics,
    clock: deps.clock,
    keys: deps.keys,
    issuer: config.publicUrl,
    sessionEnds,
    findClient,
  })
  // Polling the queue costs a store call per interval: only where a client can have a backchannel_logout_uri.
  const mayHaveReceivers =
    deps.as.clients.some((c) => c.backchannelLogout !== undefined) || deps.as.registration !== null || deps.as.clientIdMetadataDocuments !== null
  if (mayHaveReceivers) backchannelLogout.start()
  const approvals = deskFor(deps, config.approvals)
  // A CIBA request is told through the top-level `approvals.notify` (with its binding message), as a held MCP call is.
  const notify = config.approvals.notify
  const cibaNotifier =
    notify === null
      ? null
      : new ApprovalNotifier({ store: deps.store, clock: deps.clock, log: deps.log, metrics: deps.metrics, targets: new Map([[TOP_LEVEL_TARGET, notify]]) })
  cibaNotifier?.start()
  const stopNotices =
    cibaNotifier === null
      ? () => undefined
      : approvals.onOpened((record) => {
          if (record.kind === 'ciba') void cibaNotifier.queue(TOP_LEVEL_TARGET, record, approvalPageUrl(config.publicUrl, record.id))
        })
  const cibaPushes = new ClientPushes(deps.as)
  const cibaPings = new CibaPings(
    {
      deliveries: deps.store.deliveries,
      log: deps.log,
      metrics: deps.metrics,
      clock: deps.clock,
      pushes: cibaPushes,
      approval: (id) => approvals.get(id),
      findClient,
    },
    deps.keys,
  )
  // A decision made here makes its ping due at once; only where a client can be a ping client is the queue polled.
  const stopPings = approvals.onDecided((record) => cibaPings.decided(record))
  const mayPing = deps.as.clients.some((c) => c.ciba?.deliveryMode === 'ping') || deps.as.registration !== null || deps.as.clientIdMetadataDocuments !== null
  if (mayPing) cibaPings.start()
  return {
    clock: deps.clock,
    log: deps.log,
    store: deps.store,
    revocations: deps.revocations,
    metrics: deps.metrics,
    tracing: deps.tracing,
    audit: deps.audit,
    config,
    trustedProxies: deps.trustedProxies,
    clientCertificates: deps.clientCertificates,
    as: deps.as,
    keys: deps.keys,
    ownIssuer,
    jwtVerifier: new JwtVerifier({ clock: deps.clock, clockSkewSec: config.gateway.clockSkewSec }),
    issuer: config.publicUrl,
    clients,
    findClient,
    // Also ends the identity providers' discovery retries: both belong to this Runtime.
    closeClientLookup: async () => {
      upstream.close()
      stopPings()
      stopNotices()
      await Promise.all([cibaPings.close(), cibaNotifier?.close()])
      await Promise.all([backchannelLogout.close(), cibaPushes.close(), directory.close(), clientKeys.close(), assertionIssuers.close(), trustedTokens.close()])
    },
    clientKeys,
    assertionIssuers,
    trustedTokens,
    users,
    // The store's people and disabled flags exist only through the admin API (docs/admin.md).
    people: new PersonDirectory(users, deps.store.people, deps.log, config.adminApi != null),
    upstream,
    secrets: new SecretVerifier(),
    totpSecrets: TotpSecrets.fromConfig(deps.as, deps.keys),
    secureCookies: config.publicUrl.startsWith('https:'),
    resources,
    dpop: {
      token: new DpopVerifier(config.dpop, deps, 'token'),
      resource: new DpopVerifier(config.dpop, deps, 'resource'),
    },
    clientAddress: new ClientAddress(deps.trustedProxies),
    failures: { face: 'as', metrics: deps.metrics, rootLog: deps.log, quiet: false },
    sessionEnds,
    backchannelLogout,
    credentialChanges: new CredentialChanges(deps.log),
    approvals,
    ciba: new CibaRuntime(cibaPings),
    authorizationDetailsTypes: new AuthorizationDetailsTypes(deps.as.authorizationDetailsTypes),
  }
}
