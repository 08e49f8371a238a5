/**
 * The MCP conformance package's server scenarios
 * (`@modelcontextprotocol/conformance`, run by its own CLI) against one
 * reference server twice: directly, and through a bin/bearward route with an
 * `mcp` section. Scenario by scenario and check by check, the results must be
 * the same: a gateway that inspects MCP traffic must not change what a
 * conforming client sees of a conforming server.
 *
 * The installed version (0.1.16, the newest release; 0.2.0 is in alpha) has
 * server scenarios for 2025-06-18 and 2025-11-25 only: the reference server
 * is the package's "everything server" (test/helpers/mcp-everything.ts), and
 * the scenarios run in that era (sessions, SSE on POST and GET, resumption,
 * server-to-client requests, the DNS-rebinding probe).
 *
 * The CLI cannot send a token, so both runs go through the same pass-through
 * relay, which adds one for the gateway run (test/helpers/mcp-conformance.ts).
 */
import t from 'tap'
import { join } from 'node:path'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { startEverythingServer } from '../helpers/mcp-everything.js'
import { listServerScenarios, runServerScenarios, startConformanceRig, type ConformanceCheck } from '../helpers/mcp-conformance.js'
import { basic } from '../helpers/client-auth.js'

/** What a scenario's result is made of: each check's id and status, in order. */
function outcome(checks: readonly ConformanceCheck[]): string[] {
  return checks.map((c) => `${c.id}: ${c.status}`)
}

t.test('the conformance server scenarios pass through bearward exactly as they pass directly', async (t) => {
  // The CLI starts slowly: ask it for its scenarios while bearward starts.
  const listed = listServerScenarios()
  const everything = await startEverythingServer()
  const { dir, base, publicUrl, direct, gateway } = await startConformanceRig(t, everything, 'bw-mcp-conformance-')
  const scenarios = await listed
  t.ok(scenarios.size >= 30, `the CLI lists its server scenarios (${scenarios.size})`)
  t.notOk(
    [...scenarios.values()].some((versions) => versions.includes('2026-07-28')),
    'this version has no 2026-07-28 server scenarios (they are in 0.2.0, not released)',
  )
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
  const directRun = await runServerScenarios(`${direct.url}/mcp`, join(dir, 'direct'))
  const seenDirect = everything.seen.length
  const between = Date.now()
  const gatewayRun = await runServerScenarios(`${gateway.url}/mcp`, join(dir, 'gateway'))
  t.comment(`direct run ${between - started} ms, gateway run ${Date.now() - between} ms`)
  t.ok(everything.seen.length > seenDirect, 'the gateway run reached the server')

  t.same([...directRun.results.keys()].sort(), [...scenarios.keys()].sort(), 'the direct run ran every scenario')
  t.same([...gatewayRun.results.keys()].sort(), [...scenarios.keys()].sort(), 'the gateway run ran every scenario')
  const failedDirect = [...directRun.results].flatMap(([name, checks]) =>
    checks.filter((c) => c.status === 'FAILURE').map((c) => `${name}/${c.id}: ${c.errorMessage ?? ''}`),
  )
  t.same(failedDirect, [], 'the reference server passes every scenario directly')
  for (const [name, checks] of directRun.results) {
    const through = gatewayRun.results.get(name) ?? []
    const failures = through.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`)
    t.same(outcome(through), outcome(checks), `${name}: the same checks with the same results`, { failuresThroughGateway: failures })
  }
  t.equal(gatewayRun.code, directRun.code, 'the CLI exits the same way')
})
