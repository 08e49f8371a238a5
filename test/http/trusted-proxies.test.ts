import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { ClientAddress, TrustedProxies } from '../../src/http/trusted-proxies.js'

/**
 * The one trusted-proxy matcher both faces use (the gateway for forwarding
 * headers, the authorization server for its per-address throttles): IPv4
 * -mapped ranges and peers, in either spelling, mean the same IPv4 range.
 */

function request(peer: string, xff?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } } as unknown as IncomingMessage
}

t.test('an IPv4-mapped range is the IPv4 range it denotes, for both faces', async (t) => {
  for (const range of ['10.0.0.0/8', '::ffff:10.0.0.0/104', '::FFFF:10.0.0.0/104', '::ffff:a00:0/104']) {
    const trusted = new TrustedProxies([range])
    const address = new ClientAddress(trusted)
    for (const peer of ['10.1.2.3', '::ffff:10.1.2.3', '::FFFF:10.1.2.3']) {
      t.equal(trusted.has(peer), true, `${range} trusts ${peer} (gateway)`)
      t.equal(address.of(request(peer, '203.0.113.9')), '203.0.113.9', `${range}: behind ${peer} the client is the forwarded one (authorization server)`)
    }
    t.equal(trusted.has('11.0.0.1'), false, `${range} does not trust 11.0.0.1`)
    t.equal(address.of(request('11.0.0.1', '203.0.113.9')), '11.0.0.1', `${range}: an untrusted peer's X-Forwarded-For is ignored`)
  }
})

t.test('the right-most hop that is not a trusted proxy is the client, mapped hops included', async (t) => {
  const address = new ClientAddress(new TrustedProxies(['::ffff:10.0.0.0/104']))
  t.equal(address.of(request('10.0.0.1', '198.51.100.1, 203.0.113.9, ::FFFF:10.0.0.7')), '203.0.113.9')
  t.equal(address.of(request('10.0.0.1', '203.0.113.9, ::ffff:198.51.100.4')), '198.51.100.4', 'a mapped untrusted hop is reported as IPv4')
  t.equal(address.of(request('10.0.0.1', 'garbage, 10.0.0.2')), '10.0.0.1', 'an unparsable hop: the peer')
  t.equal(address.of(request('::ffff:192.0.2.1')), '192.0.2.1', 'no trusted peer: the peer, as IPv4')
})
