/**
 * A Python with authlib (and requests, its HTTP client) for the interop
 * tests: $PYTHON, else /usr/bin/python3 (Debian's python3-authlib lands
 * there), else python3 on PATH. Without one the test fails saying how to get
 * it (`apt-get install -y python3-authlib python3-requests`), never skips.
 */
import { execFile, execFileSync } from 'node:child_process'

const CANDIDATES = [process.env.PYTHON, '/usr/bin/python3', 'python3'].filter((p): p is string => p !== undefined && p !== '')

/** The first candidate that imports authlib and requests, or an error saying how to install them. */
export function findAuthlibPython(): string {
  for (const python of CANDIDATES) {
    try {
      execFileSync(python, ['-c', 'import authlib, requests'], { stdio: 'ignore', timeout: 10_000 })
      return python
    } catch {
      // try the next one
    }
  }
  throw new Error(
    `no Python with authlib and requests (tried ${CANDIDATES.join(', ')}): apt-get install -y python3-authlib python3-requests, or PYTHON=/path/to/python3 with them installed`,
  )
}

/** Run a Python script; resolves with its stdout, rejects with its stderr. */
export function runPython(python: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, args, { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`))
      else resolve(stdout)
    })
  })
}
