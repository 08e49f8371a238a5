import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { dirname } from 'node:path'

/**
 * Watch a config file for changes the way they really happen: editors write
 * a temp file and rename it over the original, and Kubernetes ConfigMaps
 * swap a `..data` symlink in the directory. So the directory is watched (not
 * only the file), events are debounced, and a reload fires only when the
 * file's content actually changed.
 */
export class ConfigWatcher {
  readonly #file: string
  readonly #onChange: () => void
  readonly #debounceMs: number
  #watchers: FSWatcher[] = []
  #timer: NodeJS.Timeout | null = null
  #lastDigest: string | null = null

  constructor(file: string, onChange: () => void, debounceMs = 150) {
    this.#file = file
    this.#onChange = onChange
    this.#debounceMs = debounceMs
  }

  /** Start watching; `loadedDigest` is the SHA-256 (hex) of the text in use, so a change made meanwhile is not missed. */
  async start(loadedDigest: string): Promise<void> {
    this.#lastDigest = loadedDigest
    const dir = dirname(this.#file)
    // In a ConfigMap mount the file itself never changes name; the swap shows
    // as `..data` events. Any event in the directory is worth a content check,
    // which costs one read of a small file.
    const dirWatcher = watch(dir, { persistent: false }, () => this.#schedule())
    dirWatcher.on('error', () => {})
    this.#watchers.push(dirWatcher)
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = null
      void this.#check()
    }, this.#debounceMs)
    this.#timer.unref()
  }

  async #check(): Promise<void> {
    const digest = await this.#digest()
    if (digest === null || digest === this.#lastDigest) return
    this.#lastDigest = digest
    this.#onChange()
  }

  async #digest(): Promise<string | null> {
    try {
      return createHash('sha256')
        .update(await readFile(this.#file))
        .digest('hex')
    } catch {
      // Mid-rename the file may be missing for a moment; the next event retries.
      return null
    }
  }

  /** The content with this digest is now in use (after a reload by SIGHUP or by this watcher). */
  loaded(digest: string): void {
    this.#lastDigest = digest
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer)
    for (const w of this.#watchers) w.close()
    this.#watchers = []
  }
}
