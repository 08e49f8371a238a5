import { createHash } from 'node:crypto'
import { MethodNotAllowed } from '../../errors.js'
import type { AsHandler } from '../context.js'
import { STYLESHEET } from '../views/stylesheet.js'
import { showError } from './respond.js'

const BODY = Buffer.from(STYLESHEET, 'utf8')
const ETAG = `"${createHash('sha256').update(BODY).digest('base64url').slice(0, 22)}"`

/** GET /assets/bearward.css: the pages' only stylesheet (the CSP allows styles from 'self' only). */
export const stylesheet: AsHandler = async (req, res) => {
  if (req.method !== 'GET' && req.method !== 'HEAD') return showError(res, new MethodNotAllowed(['GET', 'HEAD']))
  res.setHeader('content-type', 'text/css; charset=utf-8')
  res.setHeader('cache-control', 'public, max-age=3600')
  res.setHeader('x-content-type-options', 'nosniff')
  res.setHeader('etag', ETAG)
  if (req.headers['if-none-match'] === ETAG) {
    res.statusCode = 304
    res.end()
    return
  }
  res.statusCode = 200
  res.setHeader('content-length', BODY.length)
  res.end(req.method === 'HEAD' ? undefined : BODY)
}
