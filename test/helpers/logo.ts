import { crc32, deflateSync } from 'node:zlib'
import { demoClient, type DemoConfig } from './as-config.js'

/**
 * A real PNG (RGB, 8 bits) of `size`×`size` pixels: a diagonal two-colour
 * mark, for clients whose `logo_uri` is an inline image in the page tests.
 */
export function logoPng(size = 48): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(4)
    head.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([head, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(size, 0)
  ihdr.writeUInt32BE(size, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // colour type RGB
  const rows: Buffer[] = []
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3) // filter byte 0, then pixels
    for (let x = 0; x < size; x++) {
      const [r, g, b] = x + y < size ? [0x1f, 0x8a, 0x70] : [0xf2, 0xc1, 0x4e]
      row.set([r, g, b], 1 + x * 3)
    }
    rows.push(row)
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/** `logoPng` as the `data:` URL a client config carries. */
export function logoDataUrl(size = 48): string {
  return `data:image/png;base64,${logoPng(size).toString('base64')}`
}

/**
 * Edit the config of `startBrowserAs` (as-config.ts): the `web` client gets an
 * inline logo, privacy policy and terms links, and a post-logout redirect URI
 * (`/bye`) on the same test server as its redirect_uri.
 */
export function brandedWebClient(config: DemoConfig): void {
  const web = demoClient(config, 'web')
  const redirect = Array.isArray(web.redirect_uris) ? web.redirect_uris[0] : undefined
  if (typeof redirect !== 'string') throw new Error('no web redirect URI in the config')
  Object.assign(web, {
    logo_uri: logoDataUrl(),
    policy_uri: 'https://app.example.com/privacy',
    tos_uri: 'https://app.example.com/terms',
    post_logout_redirect_uris: [new URL('/bye', redirect).href],
  })
}
