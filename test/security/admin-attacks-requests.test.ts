/**
 * The attacker's pass on issue #42's admin API, request by request, through
 * `bin/bearward`: a read token trying every write route, every method and
 * method-override header; ids and paths of another kind (encodings, `..`,
 * case, look-alike usernames); If-Match of every shape; cursors forged,
 * moved or replayed after a delete; password links raced and used after
 * their person is gone. Each sends the attack and checks the refusal and
 * that nothing changed.
 */
import t, { type Test } from 'tap'
import { accessTokenOf, AdminClient, adminConfig, adminToken, itemsOf, openApiChecker } from '../helpers/admin-api.js'
import { Browser, parseForms } from '../helpers/browser.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { freePort, reply } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'

async function startAdmin(t: Test) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url })
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const api = new AdminClient(bin.admin, await openApiChecker(bin.admin))
  const write = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const read = accessTokenOf(await adminToken(bin.url, 'auditor', 'bearward:admin:read'))
  return { bin, up, api, write, read }
}

/**
 * One instance for the file, since a start costs about a second of CPU on
 * the suite's two cores: the request attacks run first (the cursor test
 * lists every person), the password links then create people of their own.
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t)
  return shared
}

/** A path of the route table with its parameters filled in. */
function concrete(template: string): string {
  return template.replace('{id}', 'bob').replace('{factor_id}', 'totp')
}

t.test('the admin API against a read token and odd requests', async (t) => {
  const { bin, up, api, write, read } = await sharedAdmin()
  const doc = (await reply(fetch(`${bin.admin}/admin/v1/openapi.json`))).json as { paths: Record<string, Record<string, unknown>> }

  t.test('a read token on every write route of the OpenAPI document: 403, nothing changed', async (t) => {
    let tried = 0
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item).filter((m) => ['post', 'patch', 'delete', 'put'].includes(m))) {
        const path = concrete(template)
        const body = method === 'post' && path === '/people' ? { username: 'mallory' } : method === 'patch' ? { claims: { name: 'x' } } : undefined
        const r = await api.call(method.toUpperCase(), path, { token: read, ...(body === undefined ? {} : { body }), headers: { 'if-match': '*' } })
        t.equal(r.status, 403, `${method} ${path}`)
        t.match(r.headers.get('www-authenticate'), /error="insufficient_scope"/)
        tried++
      }
    }
    t.ok(tried >= 10, `every write route tried (${tried})`)
    const bob = await api.call('GET', '/people/bob', { token: write })
    t.equal(bob.json?.disabled, false, 'bob is not disabled')
    t.equal((await api.call('GET', '/people/mallory', { token: write })).status, 404, 'no mallory was created')
  })

  t.test('method override headers, HEAD and methods the API does not serve', async (t) => {
    for (const name of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      const r = await api.call('GET', '/people/bob', { token: read, headers: { [name]: 'POST' } })
      t.equal(r.status, 200, `${name} on GET is a read`)
      const asPost = await reply(fetch(`${bin.admin}/admin/v1/people/bob/disable`, { headers: { authorization: `Bearer ${read}`, [name]: 'POST' } }))
      t.equal(asPost.status, 405, `${name}: GET of a write route is 405, not the write`)
      const writeAsRead = await reply(
        fetch(`${bin.admin}/admin/v1/people/bob/disable`, { method: 'POST', headers: { authorization: `Bearer ${read}`, [name]: 'GET' } }),
      )
      t.equal(writeAsRead.status, 403, `${name}: GET does not make a POST a read`)
    }
    const head = await reply(fetch(`${bin.admin}/admin/v1/people/bob/disable`, { method: 'HEAD', headers: { authorization: `Bearer ${read}` } }))
    t.equal(head.status, 405, 'HEAD of a write route')
    for (const method of ['PUT', 'OPTIONS', 'PROPFIND', 'patch-me']) {
      const r = await reply(fetch(`${bin.admin}/admin/v1/people/bob`, { method, headers: { authorization: `Bearer ${write}` } })).catch(() => null)
      if (r === null) continue // fetch refuses a method name it cannot send
      if (method === 'patch-me') {
        t.equal(r.status, 400, 'a method token node:http does not know is refused by the parser')
        continue
      }
      t.equal(r.status, 405, method)
      t.match(r.headers.get('allow'), /GET/)
    }
    t.equal((await api.call('GET', '/people/bob', { token: write })).json?.disabled, false, 'bob is still enabled')
  })

  t.test('ids and paths of another kind: 404, never another resource', async (t) => {
    const hits = up.seen.length
    const paths = [
      '/people/..%2Fclients%2Fweb',
      '/people/bob%2F..%2Falice',
      '/people/%2E%2E',
      '/people/BOB',
      '/people/bob.',
      '/people/bob%00',
      '/people/%EF%BD%82ob', // fullwidth b: folds to bob under NFKC
      '/people/b%C3%B6b',
      '/people/web', // a client's id
      '/people/ops',
      '/clients/alice', // a person's id as a client id
      '/People/bob',
      '/people/bob/',
      '//people/bob',
    ]
    for (const p of paths) {
      const r = await reply(fetch(`${bin.admin}/admin/v1${p}`, { headers: { authorization: `Bearer ${write}` } }))
      t.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`)
      t.equal(r.headers.get('content-type'), 'application/problem+json', p)
    }
    const disable = await reply(
      fetch(`${bin.admin}/admin/v1/people/..%2Fpeople%2Fbob/disable`, { method: 'POST', headers: { authorization: `Bearer ${write}` } }),
    )
    t.equal(disable.status, 404, 'a dot-dot id names no one')
    for (const id of ['bob', 'web', 'alice%2F..%2Fbob']) {
      const r = await api.call('DELETE', `/grants/${id}`, { token: write })
      t.equal(r.status, 404, `a person's or client's id as a grant id: ${id}`)
    }
    t.equal((await api.call('GET', '/people/%62ob', { token: write })).json?.id, 'bob', 'percent-encoding of the same name is the same person')
    for (const username of ['ｂob', 'böb', 'bob\u200b', 'bob\u202e', 'bob ', '']) {
      const r = await api.call('POST', '/people', { token: write, body: { username } })
      t.equal(r.status, 400, `a look-alike username ${JSON.stringify(username)} is refused`)
    }
    const onMain = await reply(fetch(`${bin.url}/admin/v1/people/bob/disable`, { method: 'POST', headers: { authorization: `Bearer ${write}` } }))
    t.equal(onMain.status, 404, 'not served on the main listener without public_path')
    t.equal(up.seen.length, hits, 'nothing reached the upstream')
    t.equal((await api.call('GET', '/people/bob', { token: write })).json?.disabled, false, 'bob is still enabled')
  })

  t.test('If-Match of every shape on a stored person', async (t) => {
    const created = await api.call('POST', '/people', { token: write, body: { username: 'erin' } })
    t.equal(created.headers.get('etag'), '"r1"')
    const patch = (ifMatch: string) =>
      api.call('PATCH', '/people/erin', { token: write, headers: { 'if-match': ifMatch }, body: { claims: { name: ifMatch } } })
    t.equal((await patch('W/"r1"')).status, 412, 'a weak tag never matches a write')
    t.equal((await patch('"r1", "r2"')).status, 412, 'a list is not taken')
    t.equal((await patch('"r01"')).status, 412, 'a leading zero')
    t.equal((await patch('"h1"')).status, 412, 'a content tag of another kind')
    t.equal((await patch('"r2"')).status, 412, 'a revision to come')
    const star = await patch('*')
    t.equal(star.status, 200, '* matches the current revision')
    t.equal(star.headers.get('etag'), '"r2"', 'no other write landed')
    t.equal((await patch('"r1"')).status, 412, 'the first ETag is stale now')
    const person = await api.call('GET', '/people/erin', { token: write })
    t.same(person.json?.claims, { name: '*' }, 'only the * write landed')
  })

  t.test('cursors: forged, moved to another list, replayed after a delete', async (t) => {
    for (const username of ['p1', 'p2', 'p3']) t.equal((await api.call('POST', '/people', { token: write, body: { username } })).status, 201)
    const first = await api.call('GET', '/people?limit=3', { token: write })
    const cursor = first.json?.next_cursor as string
    t.same(
      itemsOf(first).map((p) => p.id),
      ['alice', 'bob', 'erin'],
    )
    const [payload, mac] = cursor.split('.') as [string, string]
    const moved = Buffer.from(JSON.stringify({ l: 'people', p: 'a' }), 'utf8').toString('base64url')
    for (const forged of [`${moved}.${mac}`, `${payload}.${mac.slice(1)}A`, `${payload}`, `${payload}.${mac}.x`, 'null', '%00']) {
      const r = await api.call('GET', `/people?cursor=${encodeURIComponent(forged)}`, { token: write })
      t.equal(r.status, 400, `forged: ${forged.slice(0, 16)}`)
      t.equal(r.json?.type, 'https://bearward.dev/problems/admin/invalid_cursor')
    }
    t.equal((await api.call('GET', `/clients?cursor=${encodeURIComponent(cursor)}`, { token: write })).status, 400, 'a people cursor on clients')
    t.equal((await api.call('GET', `/grants?person=bob&cursor=${encodeURIComponent(cursor)}`, { token: write })).status, 400, 'on grants')
    t.equal((await api.call('DELETE', '/people/erin', { token: write })).status, 204, 'the person the cursor points after is deleted')
    const after = await api.call('GET', `/people?limit=3&cursor=${encodeURIComponent(cursor)}`, { token: write })
    t.equal(after.status, 200)
    t.same(
      itemsOf(after).map((p) => p.id),
      ['p1', 'p2', 'p3'],
      'the list goes on after the deleted one, skipping no one',
    )
  })
})

t.test('password links under attack', async (t) => {
  const { bin, api, write } = await sharedAdmin()

  t.test('two posts of one link at once: exactly one sets the password', async (t) => {
    await api.call('POST', '/people', { token: write, body: { username: 'dana' } })
    const link = (await api.call('POST', '/people/dana/password-link', { token: write })).json?.url as string
    const browser = new Browser()
    const page = await browser.get(link)
    t.equal(page.status, 200)
    t.equal(page.headers.get('referrer-policy'), 'same-origin', 'the link never goes to another site as a Referer')
    t.equal(page.headers.get('cache-control'), 'no-store')
    const html = await page.text()
    t.notMatch(html, /https?:\/\/(?!127\.0\.0\.1)/, 'the page loads nothing from elsewhere')
    const [form] = parseForms(html, link)
    if (form === undefined) throw new Error(`no form: ${html}`)
    t.notOk(form.action.includes('token='), 'the form posts the link’s token in its body, not in a URL')
    const [a, b] = await Promise.all([
      browser.submit(form, { password: 'first-password-1', confirm: 'first-password-1' }),
      browser.submit(form, { password: 'second-password-2', confirm: 'second-password-2' }),
    ])
    t.same([a.status, b.status].sort(), [200, 410], 'one wins, the other finds the link used')
  })

  t.test('a link for a person since disabled, or since deleted, does not work', async (t) => {
    for (const [username, end] of [
      ['frank', 'disable'],
      ['gina', 'delete'],
    ] as const) {
      await api.call('POST', '/people', { token: write, body: { username } })
      const link = (await api.call('POST', `/people/${username}/password-link`, { token: write })).json?.url as string
      const browser = new Browser()
      const [form] = parseForms(await (await browser.get(link)).text(), link)
      if (form === undefined) throw new Error('no form')
      if (end === 'disable') t.equal((await api.call('POST', `/people/${username}/disable`, { token: write })).status, 200)
      else t.equal((await api.call('DELETE', `/people/${username}`, { token: write })).status, 204)
      const used = await browser.submit(form, { password: 'a-password-now', confirm: 'a-password-now' })
      t.equal(used.status, 410, `${end}: the link is refused`)
      if (end === 'disable') t.equal((await api.call('GET', `/people/${username}`, { token: write })).json?.has_password, false, 'no password was set')
      else t.equal((await api.call('GET', `/people/${username}`, { token: write })).status, 404, 'the person did not come back')
    }
    t.ok(bin.url)
  })
})
