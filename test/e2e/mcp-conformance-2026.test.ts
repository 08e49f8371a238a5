/**
 * The MCP conformance package's server scenarios for protocol revision
 * 2026-07-28 against one reference server twice: directly, and through a
 * bin/bearward route with an `mcp` section. Scenario by scenario and check by
 * check, the results must be the same.
 *
 * Only the prerelease has these scenarios (0.2.0-alpha.12, installed as
 * `@modelcontextprotocol/conformance-next`; 0.1.16, run by
 * mcp-conformance.test.ts, stops at 2025-11-25). One CLI run per side,
 * `--suite all --spec-version 2026-07-28`, the two sides at once: every
 * scenario that applies to 2026-07-28, pending and extension ones included
 * (stateless lifecycle and `server/discover`, `subscriptions/listen`,
 * header validation, caching hints, multi-round-trip `input_required`
 * results, tasks, the carried-forward tools/resources/prompts scenarios).
 *
 * The reference server is our own (test/helpers/mcp-everything-2026.ts),
 * written from the scenarios' requirements on the SDK 2.x
 * (`@modelcontextprotocol/server` 2.4) stateless handler. It passes every scenario directly;
 * one that it failed would be listed in KNOWN_DIRECT_FAILURES with the
 * reason, and would still have to fail through the gateway check for check.
 * The extension scenarios (tasks-*, sep-2640-skills-*) are tagged
 * `extension`, not 2026-07-28, and are not run.
 *
 * `server-stateless` found two gateway differences, fixed with their own
 * tests in test/gateway/mcp-conformance-fixes.test.ts: `MCP-Protocol-Version:
 * v999.0.0` was bearward's own 400 instead of the server's -32022 naming its
 * revisions, and a `resources/subscribe` without a `uri` (removed in
 * 2026-07-28: the server's 404, -32601) was refused as naming no resource.
 * The route has tool rules only: on a route with resource rules a
 * subscribe that names no resource is still refused (nothing to judge it
 * by), deliberately unlike the server.
 *
 * The CLI cannot send a token, so both runs go through the same pass-through
 * relay, which adds one for the gateway run (test/helpers/mcp-conformance.ts).
 */
import t from 'tap'
import { join } from 'node:path'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { startEverything2026Server } from '../helpers/mcp-everything-2026.js'
import { CONFORMANCE_NEXT_CLI, listServerScenarios, runServerScenarios, startConformanceRig, type ConformanceCheck } from '../helpers/mcp-conformance.js'
import { basic } from '../helpers/client-auth.js'

const REVISION = '2026-07-28'

/**
 * Scenarios the reference server fails directly, and why (none today).
 * Through bearward they must fail the same way.
 */
const KNOWN_DIRECT_FAILURES: Record<string, string> = {}

/** What a scenario's result is made of: each check's id and status, in order. */
function outcome(checks: readonly ConformanceCheck[]): string[] {
  return checks.map((c) => `${c.id}: ${c.status}`)
}

t.test('the 2026-07-28 conformance server scenarios pass through bearward exactly as they pass directly', async (t) => {
  // The CLI starts slowly: ask it for its scenarios while bearward starts.
  const listed = listServerScenarios(CONFORMANCE_NEXT_CLI)
  const everything = await startEverything2026Server()
  const { dir, base, publicUrl, direct, gateway } = await startConformanceRig(t, everything, 'bw-mcp-conformance-2026-')
  const all = await listed
  const scenarios = [...all].filter(([, versions]) => versions.includes(REVISION)).map(([name]) => name)
  t.ok(scenarios.length >= 30, `the CLI lists server scenarios for ${REVISION} (${scenarios.length})`)
  const tokenRes = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('conformance', DEMO_SECRET) },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools tests:admin', resource: `${publicUrl}/mcp` }).toString(),
  })
  t.equal(tokenRes.status, 200, 'a token for the MCP route')
  gateway.token = String(((await tokenRes.json()) as Record<string, unknown>).access_token)

  // Without the relay's token the route refuses: the gateway run is the gateway's doing.
  const bare = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(bare.status, 401, 'the route is protected')

  const started = Date.now()
  const options = { cli: CONFORMANCE_NEXT_CLI, specVersion: REVISION }
  const [directRun, gatewayRun] = await Promise.all([
    runServerScenarios(`${direct.url}/mcp`, join(dir, 'direct'), undefined, options),
    runServerScenarios(`${gateway.url}/mcp`, join(dir, 'gateway'), undefined, options),
  ])
  t.comment(`both runs ${Date.now() - started} ms`)
  t.ok(
    everything.seen.some((r) => r.headers['x-auth-client-id'] === 'conformance'),
    'the gateway run reached the server',
  )

  t.same([...directRun.results.keys()].sort(), [...scenarios].sort(), 'the direct run ran every 2026-07-28 scenario')
  t.same([...gatewayRun.results.keys()].sort(), [...scenarios].sort(), 'the gateway run ran every 2026-07-28 scenario')
  const failedDirect = [...directRun.results].filter(([, checks]) => checks.some((c) => c.status === 'FAILURE')).map(([name]) => name)
  t.same(failedDirect.sort(), Object.keys(KNOWN_DIRECT_FAILURES).sort(), 'the reference server fails directly only the scenarios known to fail', {
    failures: [...directRun.results].flatMap(([name, checks]) =>
      checks.filter((c) => c.status === 'FAILURE').map((c) => `${name}/${c.id}: ${c.errorMessage ?? ''}`),
    ),
  })
  for (const [name, checks] of directRun.results) {
    const through = gatewayRun.results.get(name) ?? []
    const failures = through.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`)
    t.same(outcome(through), outcome(checks), `${name}: the same checks with the same results`, { failuresThroughGateway: failures })
  }
  t.equal(gatewayRun.code, directRun.code, 'the CLI exits the same way')
})
