import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

/**
 * Every relative link in the repo's Markdown (README, CONTRIBUTING, docs/,
 * bench/README, deploy/) leads somewhere: the file exists, and an anchor
 * into a Markdown file names one of its headings (GitHub's slugs). Pages
 * moved between files keep working, or this says which link broke.
 */

function markdownFiles(): string[] {
  const found = ['README.md', 'CONTRIBUTING.md', 'bench/README.md']
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.md')) found.push(path)
    }
  }
  walk('docs')
  if (existsSync('deploy')) walk('deploy')
  return found.filter((f) => existsSync(f))
}

/** GitHub's heading slug: lower case, punctuation dropped (but `-` and `_`), spaces to `-`, repeats numbered. */
function slugs(markdown: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    if (fenced) continue
    const m = /^#{1,6}\s+(.*)$/.exec(line)
    if (m === null) continue
    const text = (m[1] ?? '').replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

function links(markdown: string): string[] {
  const out: string[] = []
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    if (fenced) continue
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1] ?? '')
    for (const m of line.matchAll(/src="([^"]+)"/g)) out.push(m[1] ?? '')
  }
  return out.filter((l) => !/^(https?:|mailto:)/.test(l))
}

t.test('every relative link in the Markdown leads somewhere', async (t) => {
  const files = markdownFiles()
  t.ok(files.length > 10, 'the docs were found')
  let checked = 0
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    for (const link of links(text)) {
      const [target = '', anchor] = link.split('#')
      const path = target === '' ? file : normalize(join(dirname(file), decodeURIComponent(target)))
      if (!existsSync(path)) {
        t.fail(`${file}: ${link} names no file (${path})`)
        continue
      }
      if (anchor !== undefined && anchor !== '' && path.endsWith('.md')) {
        if (!slugs(readFileSync(path, 'utf8')).has(anchor)) t.fail(`${file}: ${link}: no heading #${anchor} in ${path}`)
      }
      checked++
    }
  }
  t.ok(checked > 50, `${checked} links checked`)
})
