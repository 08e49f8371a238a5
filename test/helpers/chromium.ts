import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { delimiter, dirname, join, resolve } from 'node:path'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type ConsoleMessage, type Page } from 'playwright-core'
import type { Test } from 'tap'

/**
 * Real Chromium for the page tests (SPEC: pages are proven in a real browser).
 *
 * The usual shape of a browser test file:
 *
 * ```ts
 * const chromium = await launchChromium()          // one browser per test file
 * t.teardown(() => chromium.close())
 * await t.test('sign in', async (t) => {
 *   const { page, checker, context } = await openPage(chromium)
 *   t.teardown(() => context.close())
 *   await page.goto(authorizeUrl)
 *   await checker.check(t, 'login')  // docs/screenshots/login-390.png and login-1280.png
 *   ...
 * })
 * ```
 *
 * `checker.check` asserts, for the page currently shown and at each of the
 * page's widths: no horizontal scroll, no serious or critical axe-core
 * violation, and writes the screenshot the README shows; then no console
 * error and no CSP violation (the page's own CSP stays enforced). A page
 * opened without a viewport is checked at both VIEWPORTS: the flow runs
 * once, at a phone's width, and each check resizes the page to a laptop's
 * width and back (the same document, so the same state: a flow run twice,
 * once a width, cost the suite twice the time for the same pages). A test
 * about one width opens its page at that viewport, and is checked there only. Axe is evaluated through the DevTools protocol, which the
 * page's CSP does not govern, so it runs without weakening the CSP that the
 * violation check watches. Pass `{ replace: { [randomValue]: 'fixed' } }` to
 * `check` when a page shows something random (a user code, a port, a date),
 * so a rerun leaves the committed screenshot unchanged. `checker.focused()`
 * describes the focused element for keyboard-only tests.
 *
 * test/helpers/browser-as.ts has the authorization-server side: startBrowserAs
 * (bin/bearward plus a real client redirect_uri), authorizeRequest,
 * exchangeCode, signIn, submitAndWait, and
 * PEOPLE (users with the demo password, some free for new tests);
 * test/helpers/device-client.ts the device's side of RFC 8628.
 */

/** The two widths every page is checked at: a phone and a laptop. */
export const VIEWPORTS = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 800 },
} as const

export type ViewportName = keyof typeof VIEWPORTS

/** Both viewport names, for `for (const v of VIEWPORT_NAMES)`. */
export const VIEWPORT_NAMES: readonly ViewportName[] = ['phone', 'desktop']

/**
 * Flags for this machine: tests run as root (no sandbox), headless, without a
 * GPU, and the network is closed, so nothing in the background may try to
 * reach Google (QUIC, component updates, sync, first-run pages).
 */
export const LAUNCH_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Executable names tried on PATH, in order, when $CHROMIUM is not set. */
const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

/** What a person must do when there is no browser; part of every "not found" error. */
export const INSTALL_HINT = 'install one with `apt-get install -y chromium` (Debian/Ubuntu), or set CHROMIUM=/path/to/chromium'

/**
 * The Chromium to drive: `$CHROMIUM` when set (it must exist), else
 * `/usr/bin/chromium`, else the first of chromium, chromium-browser,
 * google-chrome on PATH. Throws, saying how to install one, when none is found:
 * the browser tests fail then, they never skip.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env.CHROMIUM
  if (chosen !== undefined && chosen !== '') {
    if (existsSync(chosen)) return chosen
    throw new Error(`CHROMIUM=${chosen} does not exist; ${INSTALL_HINT}`)
  }
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium'
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    for (const name of CANDIDATES) {
      const file = join(dir, name)
      if (existsSync(file)) return file
    }
  }
  throw new Error(`No Chromium found for the browser tests (looked at $CHROMIUM, /usr/bin/chromium and ${CANDIDATES.join(', ')} on PATH); ${INSTALL_HINT}`)
}

/**
 * Launch Chromium (see findChromium) with LAUNCH_ARGS. Playwright gives every
 * launch a fresh temporary profile and deletes it on close. Launch one per
 * test file and close it in a teardown.
 */
export async function launchChromium(env: NodeJS.ProcessEnv = process.env): Promise<Browser> {
  const executablePath = findChromium(env)
  return chromium.launch({ executablePath, args: [...LAUNCH_ARGS], timeout: 30_000 })
}

/**
 * A fresh context (own cookies, own storage: a new person) at one of the
 * VIEWPORTS, in the light colour scheme the screenshots use. `options` adds
 * to or overrides that.
 */
export function newContext(browser: Browser, viewport: ViewportName, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  return browser.newContext({ viewport: { ...VIEWPORTS[viewport] }, colorScheme: 'light', locale: 'en-GB', ...options })
}

/** A Content-Security-Policy violation the page reported (`securitypolicyviolation` event). */
export interface CspViolation {
  directive: string
  blockedURI: string
  page: string
}

/** An axe-core finding (impact serious or critical), reduced to what a failure message needs. */
export interface AxeFinding {
  id: string
  impact: string
  help: string
  targets: string[]
}

/** Where the README's screenshots live (relative to the repository root, the tests' cwd). */
export const SCREENSHOT_DIR = 'docs/screenshots'

const AXE_SOURCE_PATH = createRequire(import.meta.url).resolve('axe-core')
let axeSource: Promise<string> | null = null

/**
 * Reports every CSP violation to the test through a binding. Installed as an
 * init script, it runs in each document before the page's own content, and
 * (like everything playwright evaluates) is not subject to the page's CSP.
 */
const CSP_LISTENER = `document.addEventListener('securitypolicyviolation', (e) => {
  globalThis.__bwCspViolation?.(JSON.stringify({ directive: e.violatedDirective, blockedURI: e.blockedURI, page: location.href }))
}, true)`

/**
 * Watches one page from its first document on: console errors, uncaught page
 * errors and CSP violations; and runs the checks every page must pass.
 */
export class PageChecker {
  readonly page: Page
  /** Console messages of type error, and uncaught exceptions, in order. */
  readonly consoleErrors: string[] = []
  readonly cspViolations: CspViolation[] = []
  /** The widths `check` checks each page at; the first is the page's own, which it is left at. */
  readonly #widths: readonly ViewportName[]

  private constructor(page: Page, widths: readonly ViewportName[]) {
    this.page = page
    this.#widths = widths
  }

  /**
   * Start watching `page`; call before its first navigation. `widths`: the
   * VIEWPORTS `check` checks each page at, the page's own first (default: only
   * the width the page has).
   */
  static async watch(page: Page, widths: readonly ViewportName[] = []): Promise<PageChecker> {
    const checker = new PageChecker(page, widths)
    await page.exposeFunction('__bwCspViolation', (json: string) => {
      checker.cspViolations.push(JSON.parse(json) as CspViolation)
    })
    await page.addInitScript(CSP_LISTENER)
    page.on('console', (m) => checker.#onConsole(m))
    page.on('pageerror', (err) => checker.consoleErrors.push(`uncaught: ${err.message}`))
    return checker
  }

  #onConsole(m: ConsoleMessage): void {
    if (m.type() !== 'error') return
    // Chromium logs "Failed to load resource: ... status of 400" for a
    // document answered with an error status. An error page (wrong password,
    // unknown code) is meant to carry one, so the document's own status is not
    // a console error; a failing subresource (stylesheet, image) still is.
    const at = m.location().url
    if (/^Failed to load resource: the server responded with a status of \d+/.test(m.text()) && at !== '' && at === this.page.url()) return
    this.consoleErrors.push(`${m.text()} (at ${at})`)
  }

  /** Which element has the keyboard focus, and whether it shows it (for keyboard-only tests). */
  async focused(): Promise<FocusedElement> {
    return this.page.evaluate(FOCUSED) as Promise<FocusedElement>
  }

  /**
   * Which element has the focus once the page has rendered. Chromium applies
   * `autofocus` at a rendering step after the load event, so on a busy machine
   * the focus can still be on the body when `page.goto` returns; two animation
   * frames later the rendering step has run.
   */
  async focusedOnArrival(): Promise<FocusedElement> {
    await this.page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))')
    return this.focused()
  }

  /** How many CSS pixels the document is wider than the viewport (0 when it does not scroll sideways). */
  async horizontalOverflow(): Promise<number> {
    return this.page.evaluate('Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth)') as Promise<number>
  }

  /**
   * Run axe-core (WCAG 2.x A and AA rules and best practices) on the page;
   * returns the serious and critical findings. Axe is evaluated through the
   * DevTools protocol (`Runtime.evaluate`), which the page's CSP does not
   * govern; no script tag is added and the CSP is not bypassed.
   */
  async axe(): Promise<AxeFinding[]> {
    axeSource ??= readFile(AXE_SOURCE_PATH, 'utf8')
    const loaded = await this.page.evaluate('typeof globalThis.axe === "object"')
    if (loaded !== true) await this.page.evaluate(await axeSource)
    const findings = await this.page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
      r.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) })))`)
    return findings as AxeFinding[]
  }

  /**
   * Screenshot the whole page to `docs/screenshots/<name>-<width>.png`; returns
   * the path. `replace` swaps volatile text (a random user code, a port) for
   * a fixed example in the page's text and visible input values for the shot
   * only (the page is put back afterwards, hidden fields are never touched),
   * so rerunning the suite leaves the committed screenshots unchanged. The
   * file is rewritten only when its bytes change.
   */
  async screenshot(name: string, replace: Readonly<Record<string, string>> = {}): Promise<string> {
    const width = this.page.viewportSize()?.width ?? 0
    const file = resolve(SCREENSHOT_DIR, `${name}-${width}.png`)
    if (Object.keys(replace).length > 0) await this.page.evaluate(replaceText(replace))
    let png: Buffer
    try {
      png = await this.page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide' })
    } finally {
      if (Object.keys(replace).length > 0) await this.page.evaluate('globalThis.__bwRestore?.()')
    }
    await mkdir(dirname(file), { recursive: true })
    const before = await readFile(file).catch(() => null)
    if (before === null || !before.equals(png)) await writeFile(file, png)
    return file
  }

  /**
   * The checks every page passes, as tap assertions named after `name`, at
   * each of the checker's widths (the page is resized to each in turn and
   * left at its own): no horizontal scroll, no serious or critical axe
   * finding, then the screenshot (see `screenshot`, which takes `replace`);
   * last, no console error and no CSP violation since the page was watched
   * (or since the last check), read last so that anything the other checks
   * provoke is caught.
   */
  async check(t: Test, name: string, options: { replace?: Readonly<Record<string, string>> } = {}): Promise<void> {
    const own = this.page.viewportSize()
    const labels: string[] = []
    // null: the page as it is (a checker of one width).
    for (const size of this.#widths.length === 0 ? [null] : this.#widths.map((v) => VIEWPORTS[v])) {
      if (size !== null) await this.page.setViewportSize({ ...size })
      const label = `${name} at ${this.page.viewportSize()?.width ?? 0}px`
      labels.push(label)
      t.equal(await this.horizontalOverflow(), 0, `${label}: no horizontal scroll`)
      t.same(await this.axe(), [], `${label}: axe finds no serious or critical violation`)
      await this.screenshot(name, options.replace)
    }
    if (own !== null && this.#widths.length > 0) await this.page.setViewportSize(own)
    const label = labels.join(', ')
    t.same(this.consoleErrors.splice(0), [], `${label}: no console error`)
    t.same(this.cspViolations.splice(0), [], `${label}: no CSP violation`)
  }
}

/** The element that has the keyboard focus, as a test reads it. */
export interface FocusedElement {
  /** Lower-case tag name (`body` when nothing is focused). */
  tag: string
  id: string
  /** `type` attribute of an input or button. */
  type: string
  /** Visible text (buttons, links) or the label of an input. */
  text: string
  /** True when the element shows a focus indicator: an outline, or a box-shadow. */
  indicated: boolean
  /** Its accessible description: the text of the elements `aria-describedby` names ('' when none). */
  description: string
}

/** Browser-side expression describing document.activeElement (see FocusedElement). */
const FOCUSED = `(() => {
  const el = document.activeElement ?? document.body
  const style = getComputedStyle(el)
  const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0
  const label = el.labels?.[0]?.textContent ?? ''
  return {
    tag: el.tagName.toLowerCase(),
    id: el.id,
    type: el.getAttribute('type') ?? '',
    text: (label || el.textContent || '').trim(),
    indicated: outline || style.boxShadow !== 'none',
    description: (el.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent?.trim() ?? '').join(' '),
  }
})()`

/**
 * Browser-side expression replacing text in text nodes and in the values of
 * visible inputs; it returns nothing and leaves `globalThis.__bwRestore`, which
 * puts every original back (hidden fields are never touched, so the form
 * still submits what the server sent).
 */
function replaceText(replace: Readonly<Record<string, string>>): string {
  return `(() => {
  const pairs = Object.entries(${JSON.stringify(replace)})
  const swap = (s) => pairs.reduce((acc, [from, to]) => acc.split(from).join(to), s)
  const undo = []
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const node = n, was = node.nodeValue
    if (swap(was) !== was) { node.nodeValue = swap(was); undo.push(() => { node.nodeValue = was }) }
  }
  for (const input of document.querySelectorAll('input:not([type="hidden"])')) {
    const was = input.value
    if (swap(was) !== was) { input.value = swap(was); undo.push(() => { input.value = was }) }
  }
  globalThis.__bwRestore = () => { for (const u of undo) u() }
})()`
}

/**
 * A page in a fresh context, watched from its first document. Without
 * `viewport` it is at a phone's width and its checker checks each page at
 * both VIEWPORTS; at a `viewport`, at that one only. Close `context` when done.
 */
export async function openPage(
  browser: Browser,
  viewport: ViewportName | null = null,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page; checker: PageChecker }> {
  const context = await newContext(browser, viewport ?? VIEWPORT_NAMES[0]!, options)
  try {
    const page = await context.newPage()
    const checker = await PageChecker.watch(page, viewport === null ? VIEWPORT_NAMES : [])
    return { context, page, checker }
  } catch (err) {
    await context.close()
    throw err
  }
}
