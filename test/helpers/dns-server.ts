import { createSocket } from 'node:dgram'
import { once } from 'node:events'

/** What the responder answers for one name: IPv4 addresses and their TTL in seconds; `fail`: SERVFAIL. */
export interface DnsRecord {
  addresses: string[]
  ttl: number
  fail?: boolean
}

/**
 * A small DNS responder on 127.0.0.1 (UDP, RFC 1035 4.1): A queries for a
 * name in `records` get its addresses with its TTL, AAAA queries an empty
 * answer, other names NXDOMAIN. `queries` counts the A queries per name, so
 * a test sees when the gateway resolved again. Change `records` to change
 * the answers.
 */
export async function startDnsServer(records: Map<string, DnsRecord>): Promise<{ server: string; queries: Map<string, number>; close(): Promise<void> }> {
  const socket = createSocket('udp4')
  const queries = new Map<string, number>()
  socket.on('message', (msg, peer) => {
    if (msg.length < 12) return
    // The question: length-prefixed labels up to a zero byte, then type and class.
    const labels: string[] = []
    let i = 12
    while (i < msg.length && msg[i] !== 0) {
      const len = msg[i] as number
      labels.push(msg.subarray(i + 1, i + 1 + len).toString('ascii'))
      i += 1 + len
    }
    const questionEnd = i + 5
    if (questionEnd > msg.length) return
    const type = msg.readUInt16BE(i + 1)
    const name = labels.join('.').toLowerCase()
    const record = records.get(name)
    if (type === 1) queries.set(name, (queries.get(name) ?? 0) + 1)
    const rcode = record === undefined ? 3 : record.fail === true ? 2 : 0
    const answers = rcode === 0 && type === 1 ? (record?.addresses ?? []) : []
    const header = Buffer.alloc(12)
    msg.copy(header, 0, 0, 2)
    header.writeUInt16BE(0x8180 | rcode, 2)
    header.writeUInt16BE(1, 4)
    header.writeUInt16BE(answers.length, 6)
    const rrs = answers.map((address) => {
      const rr = Buffer.alloc(16)
      rr.writeUInt16BE(0xc00c, 0) // the name: a pointer to the question's
      rr.writeUInt16BE(1, 2)
      rr.writeUInt16BE(1, 4)
      rr.writeUInt32BE(record?.ttl ?? 0, 6)
      rr.writeUInt16BE(4, 10)
      for (const [k, octet] of address.split('.').entries()) rr.writeUInt8(Number(octet), 12 + k)
      return rr
    })
    socket.send(Buffer.concat([header, msg.subarray(12, questionEnd), ...rrs]), peer.port, peer.address)
  })
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  const { port } = socket.address()
  return {
    server: `127.0.0.1:${port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}
