import t, { type Test } from 'tap'
import { access, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findChromium, INSTALL_HINT, launchChromium, openPage, VIEWPORTS } from '../helpers/chromium.js'
import { startUpstream } from '../helpers/upstream.js'
import { eventually } from '../helpers/http.js'

// A real browser on a 2-core machine shared with the rest of the suite:
// more than tap's default per-file timeout.
t.setTimeout(300_000)

/**
 * The page checks can fail: each is shown a page with the fault it looks for
 * (served by a real HTTP server), so a green browser suite means something.
 */

const PAGES: Record<string, { status?: number; headers?: Record<string, string>; body: string }> = {
  '/unlabelled': { body: '<!doctype html><html><title>x</title><body><input type="text"><p style="color:#ccc;background:#fff">faint</p></body></html>' },
  '/wide': { body: '<!doctype html><html lang="en"><title>x</title><body><main><div style="width:3000px">wide</div></main></body></html>' },
  // Wider than a phone (390 px), narrower than a laptop (1280 px).
  '/wider-than-a-phone': { body: '<!doctype html><html lang="en"><title>x</title><body><main><div style="width:800px">800 px wide</div></main></body></html>' },
  '/csp': {
    headers: { 'content-security-policy': "default-src 'none'" },
    body: '<!doctype html><html lang="en"><title>x</title><body><main><img src="/pixel.png" alt="pixel"></main></body></html>',
  },
  '/missing-style': { body: '<!doctype html><html lang="en"><title>x</title><link rel="stylesheet" href="/nope.css"><body><main>x</main></body></html>' },
  '/error-status': { status: 400, body: '<!doctype html><html lang="en"><title>x</title><body><main>A page that is an error.</main></body></html>' },
}

t.test('findChromium says how to install a browser when $CHROMIUM names nothing', async (t) => {
  t.throws(() => findChromium({ CHROMIUM: '/nonexistent/chromium', PATH: '' }), {
    message: /CHROMIUM=\/nonexistent\/chromium does not exist.*apt-get install -y chromium/,
  })
  t.match(INSTALL_HINT, /CHROMIUM=\/path/)
})

t.test('the page checks catch what they look for', async (t) => {
  const server = await startUpstream('pages', (req, res) => {
    const page = PAGES[req.url ?? '']
    res.writeHead(page?.status ?? (page ? 200 : 404), { 'content-type': page ? 'text/html; charset=utf-8' : 'text/plain', ...page?.headers })
    res.end(page?.body ?? 'not found')
  })
  t.teardown(() => server.close())
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const { context, page, checker } = await openPage(browser, 'phone')
  t.teardown(() => context.close())

  await page.goto(`${server.url}/unlabelled`)
  const ids = (await checker.axe()).map((f) => f.id).sort()
  t.ok(ids.includes('label'), `axe: an unlabelled input (${ids.join(', ')})`)
  t.ok(ids.includes('color-contrast'), 'axe: faint text')
  t.ok(ids.includes('html-has-lang'), 'axe: no lang')

  await page.goto(`${server.url}/wide`)
  t.ok((await checker.horizontalOverflow()) > 2000, 'a page wider than the viewport scrolls sideways')

  checker.consoleErrors.splice(0)
  await page.goto(`${server.url}/csp`)
  // The report travels from the page through a binding: wait for it to arrive.
  await eventually(async () => checker.cspViolations.length > 0, 5000)
  t.match(checker.cspViolations, [{ directive: 'img-src', blockedURI: `${server.url}/pixel.png`, page: `${server.url}/csp` }], 'the CSP violation is reported')
  t.match(checker.consoleErrors.join('\n'), /Content Security Policy/, 'and logged as a console error')

  checker.consoleErrors.splice(0)
  await page.goto(`${server.url}/missing-style`)
  await page.waitForLoadState('load')
  t.match(checker.consoleErrors.join('\n'), /Failed to load resource.*404.*nope\.css/, 'a missing stylesheet is a console error')

  checker.consoleErrors.splice(0)
  await page.goto(`${server.url}/error-status`)
  await page.waitForLoadState('load')
  t.same(checker.consoleErrors, [], 'a document answered with an error status on purpose is not a console error')

  await t.test('a page opened without a viewport is checked at both widths, and left at the phone width', async (t) => {
    const both = await openPage(browser)
    t.teardown(() => both.context.close())
    const shots = await mkdtemp(join(tmpdir(), 'bearward-page-checker-'))
    t.teardown(() => rm(shots, { recursive: true, force: true }))
    await both.page.goto(`${server.url}/wider-than-a-phone`)
    t.same(both.page.viewportSize(), VIEWPORTS.phone, 'opened at the phone width')

    // `check` asserts on the sub-test it is given. Every failing assertion
    // goes out through the sub-test's `fail`: replaced, it records the
    // failures instead of reporting them, so this test reads them and stays
    // green; the passing ones are reported as usual, and recorded too.
    const failures: string[] = []
    const passes: string[] = []
    await t.test('check, its failures captured', async (checked: Test) => {
      const pass = checked.pass
      checked.pass = (...args: Parameters<Test['pass']>) => {
        passes.push(typeof args[0] === 'string' ? args[0] : '')
        return pass(...args)
      }
      checked.fail = (...args: Parameters<Test['fail']>) => {
        failures.push(typeof args[0] === 'string' ? args[0] : JSON.stringify(args[0]))
        return false
      }
      // An absolute name: the screenshots go to the temporary directory, not docs/screenshots.
      await both.checker.check(checked, join(shots, 'page'))
    })
    t.same(failures, [`${join(shots, 'page')} at 390px: no horizontal scroll`], 'check fails at 390 px: the page scrolls sideways there')
    t.ok(passes.includes(`${join(shots, 'page')} at 1280px: no horizontal scroll`), 'and passes at 1280 px, where it does not')
    t.ok(passes.includes(`${join(shots, 'page')} at 1280px: axe finds no serious or critical violation`), 'axe ran at 1280 px too')
    await t.resolves(access(join(shots, 'page-390.png')), 'a screenshot at 390 px')
    await t.resolves(access(join(shots, 'page-1280.png')), 'and at 1280 px')
    t.same(both.page.viewportSize(), VIEWPORTS.phone, 'the page is back at the phone width afterwards')
    t.ok((await both.checker.horizontalOverflow()) > 0, 'where it scrolls sideways again')
  })
})
