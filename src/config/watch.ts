import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { dirname } from 'node:path'
import { performance } from 'node:perf_hooks'

/**
 * Watch a config file for changes the way they really happen: editors write
 * a temp file and rename it over the original, and Kubernetes ConfigMaps
 * swap a `..data` symlink in the directory. So the directory is watched (not
 * only the file), events are debounced, and a reload fires only when the
 * file's content actually changed.
 *
 * The debounce is bounded: the content is checked at most `maxWaitMs` after
 * the first event of a burst, however many events follow. Other files in
 * the directory change too (a log written every 50 ms, a key being rotated),
 * and a wait that restarted on each of their events postponed a reload for
 * as long as they kept being written.
 */
export class ConfigWatcher {
  readonly #file: string
  readonly #onChange: () => void
  readonly #debounceMs: number
  readonly #maxWaitMs: number
  #watchers: FSWatcher[] = []
  #timer: NodeJS.Timeout | null = null
  /** performance.now() of the first event not yet checked, or null when none waits. */
  #firstEventAt: number | null = null
  #lastDigest: string | null = null

  /**
   * `debounceMs`: quiet time after the last event before the content is
   * checked; `maxWaitMs`: the longest time after the first event before it
   * is checked anyway.
   */
  constructor(file: string, onChange: () => void, debounceMs = 150, maxWaitMs = 1000) {
    this.#file = file
    this.#onChange = onChange
    this.#debounceMs = debounceMs
    this.#maxWaitMs = Math.max(debounceMs, maxWaitMs)
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
    const now = performance.now()
    this.#firstEventAt ??= now
    const due = Math.min(now + this.#debounceMs, this.#firstEventAt + this.#maxWaitMs)
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = setTimeout(
      () => {
        this.#timer = null
        this.#firstEventAt = null
        void this.#check()
      },
      Math.max(0, due - now),
    )
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
