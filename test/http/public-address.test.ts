/**
 * The global-unicast rule for fetches of URLs a stranger chose: every
 * special-purpose block of IANA's registries (one address at each edge of
 * the block, and one just outside where the outside is public), the IPv4
 * embedded in mapped, NAT64, 6to4 and Teredo forms judged as IPv4, spellings
 * Node would not connect to as written, this host's own interface addresses,
 * and the connector refusing a literal and a resolved name before any byte
 * is sent.
 */
import t, { type Test } from 'tap'
import { createServer, type Server, type Socket } from 'node:net'
import type { NetworkInterfaceInfo } from 'node:os'
import { Agent, request } from 'undici'
import { NonPublicAddressError, PublicAddresses, specialPurposeProblem } from '../../src/http/public-address.js'
import { listen } from '../helpers/http.js'

/** [address, the reason's words (a substring), or null when the address is public] */
const TABLE: ReadonlyArray<readonly [string, string | null]> = [
  // IPv4: IANA special-purpose registry, first and last address of each block
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['1.0.0.1', null],
  ['10.0.0.0', 'private'],
  ['10.255.255.255', 'private'],
  ['11.0.0.0', null],
  ['100.63.255.255', null],
  ['100.64.0.0', 'carrierGradeNat'],
  ['100.127.255.255', 'carrierGradeNat'],
  ['100.128.0.0', null],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['169.254.169.254', 'linkLocal'],
  ['172.15.255.255', null],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', null],
  ['192.0.0.0', 'reserved'],
  ['192.0.0.9', 'reserved'],
  ['192.0.1.255', null],
  ['192.0.2.0', 'reserved'],
  ['192.0.2.255', 'reserved'],
  ['192.0.3.0', null],
  ['192.31.196.1', 'as112'],
  ['192.52.193.1', 'amt'],
  ['192.88.99.1', 'reserved'],
  ['192.168.1.1', 'private'],
  ['192.175.48.1', 'as112'],
  ['198.17.255.255', null],
  ['198.18.0.0', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['198.20.0.0', null],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.255', 'reserved'],
  ['203.0.114.0', null],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['8.8.8.8', null],
  ['93.184.216.34', null],
  // Spellings Node would not read as written (or would read differently): refused, never guessed
  ['0x7f.0.0.1', 'not an IP address'],
  ['127.1', 'not an IP address'],
  ['010.0.0.1', 'not an IP address'],
  ['2130706433', 'not an IP address'],
  ['localhost', 'not an IP address'],
  ['', 'not an IP address'],
  ['fe80::1%eth0', 'scoped'],
  ['2606:4700::1111%1', 'scoped'],
  // IPv6: IANA special-purpose registry
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['::2', 'IPv4-compatible'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['::ffff:0:8.8.8.8', 'IPv4-translated'],
  ['0:0:0:0:0:0:8.8.8.8', 'IPv4-compatible'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['100::', 'discard-only'],
  ['100::ffff:ffff:ffff:ffff', 'discard-only'],
  ['100:0:0:1::1', 'dummy'],
  ['2001:1::1', 'IETF protocol assignments'],
  ['2001:2::1', 'IETF protocol assignments'],
  ['2001:3::1', 'IETF protocol assignments'],
  ['2001:4:112::1', 'IETF protocol assignments'],
  ['2001:20::1', 'IETF protocol assignments'],
  ['2001:1ff:ffff::1', 'IETF protocol assignments'],
  ['2001:200::1', null],
  ['2001:db8::', 'documentation'],
  ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
  ['2001:db9::1', null],
  ['2620:4f:8000::1', 'AS112'],
  ['3fff::1', 'documentation'],
  ['3fff:fff:ffff::1', 'documentation'],
  ['5f00::1', 'segment routing'],
  ['fc00::1', 'unique-local'],
  ['fd00::2', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['4000::1', 'outside 2000::/3'],
  ['1fff:ffff::1', 'outside 2000::/3'],
  ['e000::1', 'outside 2000::/3'],
  ['2606:4700::1111', null],
  ['2a00:1450:4001:80e::200e', null],
  ['3ffe:ffff::1', null],
  // IPv4-mapped: the IPv4 decides, in either spelling
  ['::ffff:127.0.0.1', 'IPv4-mapped ::ffff:7f00:1 embeds 127.0.0.1 is loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:A9FE:A9FE', 'linkLocal'],
  ['::ffff:192.0.2.1', 'reserved'],
  ['::ffff:8.8.8.8', null],
  // NAT64 well-known prefix (RFC 6052): the last 32 bits are the destination
  ['64:ff9b::127.0.0.1', 'NAT64 64:ff9b::7f00:1 embeds 127.0.0.1 is loopback'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b::c000:201', 'reserved'],
  ['64:ff9b::808:808', null],
  // 6to4 (RFC 3056): 2002:V4ADDR::/48
  ['2002:7f00:1::1', '6to4 2002:7f00:1::1 embeds 127.0.0.1 is loopback'],
  ['2002:c000:201::1', 'reserved'],
  ['2002:a9fe:a9fe::', 'linkLocal'],
  ['2002:c0a8:101:1::1', 'private'],
  ['2002:808:808::1', null],
  // Teredo (RFC 4380 4): server IPv4 in bits 32-63, client IPv4 XOR 0xffffffff in the last 32
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', null],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo 2001:0:4136:e378:8000:63bf:3fff:fdd2 embeds 192.0.2.45 is reserved'],
  ['2001:0:7f00:1:8000:63bf:3fff:fdd2', 'Teredo 2001:0:7f00:1:8000:63bf:3fff:fdd2 embeds 127.0.0.1 is loopback'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo 2001:0:4136:e378:8000:63bf:80ff:fffe embeds 127.0.0.1 is loopback'],
  ['2001:0:4136:e378::f5ff:fffe', 'private'],
  ['2001:0:4136:e378::3fff:fdfd', 'reserved'],
]

t.test('the registries, table-driven', async (t) => {
  for (const [address, expected] of TABLE) {
    const why = specialPurposeProblem(address)
    if (expected === null) t.equal(why, undefined, `${address} is public`)
    else t.match(why ?? '(allowed)', expected, `${address} refused: ${why ?? 'allowed!'}`)
  }
})

/** An interface list, as os.networkInterfaces() gives it. */
function iface(address: string, family: 'IPv4' | 'IPv6'): NetworkInterfaceInfo {
  return family === 'IPv4'
    ? { address, netmask: '255.255.255.0', family, mac: '02:00:00:00:00:01', internal: false, cidr: `${address}/24` }
    : { address, netmask: 'ffff:ffff:ffff:ffff::', family, mac: '02:00:00:00:00:01', internal: false, cidr: `${address}/64`, scopeid: 0 }
}

t.test("this host's own addresses are refused, in every form that reaches them", async (t) => {
  let reads = 0
  let list = { eth0: [iface('93.184.216.34', 'IPv4'), iface('2606:4700:10::6816:1', 'IPv6')] }
  const addresses = new PublicAddresses({
    interfaces: () => {
      reads++
      return list
    },
  })
  t.match(addresses.problem('93.184.216.34'), 'an address of this host')
  t.match(addresses.problem('::ffff:93.184.216.34'), 'an address of this host', 'mapped')
  t.match(addresses.problem('64:ff9b::5db8:d822'), 'an address of this host', 'NAT64')
  t.match(addresses.problem('2002:5db8:d822::1'), 'an address of this host', '6to4')
  t.match(addresses.problem('2606:4700:10:0:0:0:6816:1'), 'an address of this host', 'IPv6, another spelling')
  t.equal(addresses.problem('93.184.216.35'), undefined, 'the neighbour is public')
  t.equal(addresses.problem('2606:4700:10::6816:2'), undefined)
  t.match(addresses.problem('10.0.0.1'), 'private', 'the registries still apply')
  t.equal(reads, 1, 'the interface list is read once and reused')
  list = { eth0: [iface('93.184.216.35', 'IPv4')] }
  const fresh = new PublicAddresses({ interfaces: () => list, interfacesTtlMs: 0 })
  t.match(fresh.problem('93.184.216.35'), 'an address of this host', 'read again when its time is up')
  t.equal(fresh.problem('93.184.216.34'), undefined)
})

t.test('allow_hosts: names and literals, brackets or not, whatever case', async (t) => {
  const addresses = new PublicAddresses({ allowHosts: ['Docs.Internal', '[fd00::5]', '10.0.0.5'] })
  t.equal(addresses.allowsHost('docs.internal'), true)
  t.equal(addresses.allowsHost('fd00::5'), true)
  t.equal(addresses.allowsHost('[FD00::5]'), true)
  t.equal(addresses.allowsHost('10.0.0.5'), true)
  t.equal(addresses.allowsHost('10.0.0.6'), false)
})

/** A TCP server that counts connections: a refused destination must see none. */
async function countingServer(t: Test, host: string): Promise<{ port: number; connections: () => number }> {
  let connections = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on('error', () => undefined)
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}')
  })
  const serverAt = await listen(server, host)
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  )
  return { port: serverAt.port, connections: () => connections }
}

t.test('the connector: a refused literal or name never connects; an allowed host does', async (t) => {
  const srv = await countingServer(t, '127.0.0.1')
  const strict = new Agent({ connect: new PublicAddresses().connector() })
  const allowed = new Agent({ connect: new PublicAddresses({ allowHosts: ['localhost'] }).connector() })
  t.teardown(async () => {
    await strict.close()
    await allowed.close()
  })
  for (const url of [
    `http://127.0.0.1:${srv.port}/`,
    `http://[::ffff:127.0.0.1]:${srv.port}/`,
    `http://localhost:${srv.port}/`,
    `http://0x7f.1:${srv.port}/`,
  ]) {
    const err = await request(url, { dispatcher: strict }).then(
      () => null,
      (e: unknown) => e,
    )
    t.type(err, NonPublicAddressError, `${url} refused`)
  }
  t.equal(srv.connections(), 0, 'the server saw no connection')
  const res = await request(`http://localhost:${srv.port}/`, { dispatcher: allowed })
  t.equal(await res.body.text(), '{}', 'an allowed host connects')
  t.equal(srv.connections(), 1)
})
