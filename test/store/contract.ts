/**
 * The behaviour every Store implementation must show (src/store/types.ts),
 * one file per family in contract/. Run by memory.test.ts, redis.test.ts and
 * redis-cluster.test.ts. Time moves only through the ManualClock; nothing
 * sleeps to expire.
 */
import type { Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { adminClientsContract } from './contract/admin-clients.js'
import { allowancesContract } from './contract/allowances.js'
import { approvalsContract } from './contract/approvals.js'
import { clientsContract } from './contract/clients.js'
import { codesContract } from './contract/codes.js'
import { deliveriesContract } from './contract/deliveries.js'
import { devicesContract } from './contract/devices.js'
import { grantsContract } from './contract/grants.js'
import { knownBrowsersContract } from './contract/known-browsers.js'
import { mcpSessionsContract } from './contract/mcp-sessions.js'
import { opaqueTokensContract } from './contract/opaque-tokens.js'
import { passkeysContract } from './contract/passkeys.js'
import { peopleContract } from './contract/people.js'
import { pushedRequestsContract } from './contract/pushed-requests.js'
import { rateLimitsContract } from './contract/rate-limits.js'
import { revocationsContract } from './contract/revocations.js'
import { sessionsContract } from './contract/sessions.js'
import { singleUseContract } from './contract/single-use.js'
import { signalsContract } from './contract/signals.js'
import { totpContract } from './contract/totp.js'
import { trafficLimitsContract } from './contract/traffic-limits.js'
import { upstreamContract } from './contract/upstream.js'
import { type MakeStore, setupOf, token } from './contract/fixtures.js'

export { codeRecord, deviceRecord, grantRecord, nowSec, token, userCode, type MakeStore, type StoreHarness } from './contract/fixtures.js'

export function runStoreContract(t: Test, name: string, makeStore: MakeStore): void {
  const setup = setupOf(makeStore)

  t.test(`${name}: ping answers`, async (tt) => {
    const { store } = await setup(tt)
    await tt.resolves(store.ping())
  })

  codesContract(t, name, setup)
  grantsContract(t, name, setup)
  revocationsContract(t, name, setup)
  opaqueTokensContract(t, name, setup)
  devicesContract(t, name, setup)
  totpContract(t, name, setup)
  sessionsContract(t, name, setup)
  allowancesContract(t, name, setup)
  rateLimitsContract(t, name, setup)
  upstreamContract(t, name, setup)
  passkeysContract(t, name, setup)
  singleUseContract(t, name, setup)
  knownBrowsersContract(t, name, setup)
  clientsContract(t, name, setup)
  mcpSessionsContract(t, name, setup)
  pushedRequestsContract(t, name, setup)
  trafficLimitsContract(t, name, setup)
  signalsContract(t, name, setup)
  deliveriesContract(t, name, setup)
  peopleContract(t, name, setup)
  approvalsContract(t, name, setup)
  adminClientsContract(t, name, setup)

  t.test(`${name}: a closed store rejects with StoreUnavailableError`, async (tt) => {
    const clock = new ManualClock()
    const h = await makeStore(clock)
    tt.teardown(() => h.cleanup())
    await h.store.close()
    await tt.rejects(h.store.ping(), StoreUnavailableError)
    await tt.rejects(h.store.codes.take(token().hash), StoreUnavailableError)
    await tt.rejects(
      h.store.revocations.subscribe(() => undefined),
      StoreUnavailableError,
    )
    await tt.rejects(h.store.singleUse.use('k', 1), StoreUnavailableError)
    await tt.rejects(h.store.pushedRequests.take(token().hash), StoreUnavailableError)
    await tt.rejects(h.store.clients.get('c'), StoreUnavailableError)
    await tt.rejects(h.store.signals.lease('l', 'a', 1000), StoreUnavailableError)
    await tt.rejects(h.store.signals.isDisabled('a'), StoreUnavailableError)
    await tt.rejects(h.store.allowances.note('alice', 'app', { scopes: [], at: 0, grantId: 'g', until: 1 }), StoreUnavailableError)
    await tt.rejects(h.store.allowances.list('alice'), StoreUnavailableError)
    await tt.rejects(h.store.approvals.get('a', 0), StoreUnavailableError)
    await tt.rejects(h.store.allowances.withdraw('alice', 'app', 600), StoreUnavailableError)
    await tt.rejects(
      async () => h.store.trafficLimits.take([{ key: 'k', cost: 1, rule: { kind: 'rate', intervalMs: 1000, capacityMs: 1000 } }]),
      StoreUnavailableError,
    )
  })
}
