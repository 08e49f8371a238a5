import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { MethodNotAllowed } from '../../errors.js'
import type { AsHandler } from '../context.js'
import { PASSKEY_SCRIPT } from '../views/passkey-script.js'
import { STYLESHEET } from '../views/stylesheet.js'
import { showError } from './respond.js'

/** A fixed file served with a strong ETag (GET and HEAD, 304 on If-None-Match). */
function staticAsset(text: string, contentType: string): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const body = Buffer.from(text, 'utf8')
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return showError(res, new MethodNotAllowed(['GET', 'HEAD']))
    res.setHeader('content-type', contentType)
    res.setHeader('cache-control', 'public, max-age=3600')
    res.setHeader('x-content-type-options', 'nosniff')
    res.setHeader('etag', etag)
    if (req.headers['if-none-match'] === etag) {
      res.statusCode = 304
      res.end()
      return
    }
    res.statusCode = 200
    res.setHeader('content-length', body.length)
    res.end(req.method === 'HEAD' ? undefined : body)
  }
}

/** The stylesheet's answer, for the admin pages too (src/admin/pages/), which have no AsHandler context. */
export const serveStylesheet = staticAsset(STYLESHEET, 'text/css; charset=utf-8')

/** GET /assets/bearward.css: the pages' only stylesheet (the CSP allows styles from 'self' only). */
export const stylesheet: AsHandler = (req, res) => serveStylesheet(req, res)

/** GET /assets/passkeys.js: the pages' only script (views/passkey-script.ts), allowed by its exact URL. */
export const passkeyScript: AsHandler = staticAsset(PASSKEY_SCRIPT, 'text/javascript; charset=utf-8')
