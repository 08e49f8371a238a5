import t from 'tap'
import { MemoryStore } from '../../src/store/memory.js'
import type { DeviceRecord } from '../../src/store/types.js'
import { USER_CODE_ALPHABET } from '../../src/tokens/user-code.js'
import { basic, send, startAs } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

t.test('POST /device_authorization', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const url = `${h.url}/device_authorization`

  t.test('a public client gets device and user codes', async (t) => {
    const r = await reply(postForm(url, { client_id: 'tv', scope: 'orders:read' }))
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store')
    const body = r.json ?? {}
    t.same(Object.keys(body).sort(), ['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete'])
    t.match(body.device_code, /^[A-Za-z0-9_-]{43}\.\d+$/)
    t.match(body.user_code, new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`))
    t.equal(body.verification_uri, `${h.issuer}/device`)
    t.equal(body.verification_uri_complete, `${h.issuer}/device?user_code=${String(body.user_code)}`)
    t.equal(body.expires_in, 600)
    t.equal(body.interval, 5)
    const stored = await h.store.devices.getByUserCode(String(body.user_code).replace('-', ''))
    t.match(stored?.record, { clientId: 'tv', scope: 'orders:read', status: 'pending', sub: null, intervalSec: 5, lastPollMs: 0 })
  })

  t.test('the user code alphabet has no vowels and no look-alikes', async (t) => {
    t.notMatch(USER_CODE_ALPHABET, /[AEIOUY01]/)
    const seen = new Set<string>()
    for (let i = 0; i < 40; i++) {
      const r = await reply(postForm(url, { client_id: 'tv' }))
      for (const ch of String(r.json?.user_code).replace('-', '')) seen.add(ch)
    }
    t.ok([...seen].every((c) => USER_CODE_ALPHABET.includes(c)))
    t.ok(seen.size > 10, 'codes are spread over the alphabet')
  })

  t.test("no scope: the client's registered scopes", async (t) => {
    const r = await reply(postForm(url, { client_id: 'spa' }))
    const stored = await h.store.devices.getByUserCode(String(r.json?.user_code).replace('-', ''))
    t.equal(stored?.record.scope, 'openid profile orders:read')
  })

  t.test('a scope beyond the registration is invalid_scope and stores nothing', async (t) => {
    const r = await reply(postForm(url, { client_id: 'tv', scope: 'orders:write' }))
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'invalid_scope')
  })

  t.test('a client without the device grant is unauthorized_client', async (t) => {
    const r = await reply(postForm(url, {}, { authorization: basic('web') }))
    t.equal(r.status, 400)
    t.same(r.json, { error: 'unauthorized_client', error_description: 'The client is not allowed to use the device authorization grant' })
  })

  t.test('client authentication is required', async (t) => {
    const r = await reply(postForm(url, { scope: 'orders:read' }))
    t.equal(r.status, 401)
    t.equal(r.json?.error, 'invalid_client')
    t.equal((await reply(postForm(url, { client_id: 'nobody' }))).status, 401)
  })

  t.test('only POST with a form', async (t) => {
    t.equal((await send(url)).status, 405)
    const json = await send(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    t.equal(json.status, 400)
    t.equal(json.json?.error, 'invalid_request')
  })
})

/** A store whose first `collisions` devices.put calls find the user code taken. */
class CollidingStore extends MemoryStore {
  collisions: number
  attempts: string[] = []
  constructor(clock: ConstructorParameters<typeof MemoryStore>[0], collisions: number) {
    super(clock, { sweepIntervalMs: 0 })
    this.collisions = collisions
    const put = this.devices.put.bind(this.devices)
    this.devices.put = async (deviceHash: string, record: DeviceRecord): Promise<boolean> => {
      this.attempts.push(record.userCode)
      if (this.collisions > 0) {
        this.collisions--
        return false
      }
      return put(deviceHash, record)
    }
  }
}

t.test('a user code collision is retried with a new code', async (t) => {
  let store: CollidingStore | null = null
  const h = await startAs({ store: (clock) => (store = new CollidingStore(clock, 2)) })
  t.teardown(() => h.close())
  const r = await reply(postForm(`${h.url}/device_authorization`, { client_id: 'tv' }))
  t.equal(r.status, 200)
  const attempts = (store as CollidingStore | null)?.attempts ?? []
  t.equal(attempts.length, 3)
  t.equal(attempts[2], String(r.json?.user_code).replace('-', ''))
})

t.test('endless collisions give up with 500 server_error', async (t) => {
  const h = await startAs({ store: (clock) => new CollidingStore(clock, 1000) })
  t.teardown(() => h.close())
  const r = await reply(postForm(`${h.url}/device_authorization`, { client_id: 'tv' }))
  t.equal(r.status, 500)
  t.same(r.json, { error: 'server_error', error_description: 'Could not allocate a user code' })
})
